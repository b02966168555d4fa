import { describe, expect, it } from "vitest";
import { DefaultSubscription, type Topic } from "@mailroom/proto/audience/v1/topics_pb.js";
import { topicListView, topicView } from "./topics.js";

const HOSTILE = '<script>alert(1)</script>"';
const topic = { id: "top_1", name: `News${HOSTILE}`, description: `About${HOSTILE}`, defaultSubscription: DefaultSubscription.OPT_IN } as Topic;
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("topics views", () => {
  it("escapes names and descriptions in the list and the typed values of the create form", () => {
    const page = topicListView({ topics: [topic], canEdit: true, csrf, values: { name: HOSTILE, description: `</textarea>${HOSTILE}`, defaultSubscription: "OPT_IN" } }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(">News&lt;script&gt;alert(1)&lt;/script&gt;&quot;</a><br><span class=\"muted\">About&lt;script&gt;");
    expect(page).toContain('id="name" name="name" required maxlength="200" value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(page).toContain(">&lt;/textarea&gt;&lt;script&gt;");
    expect(page).toContain('id="def-OPT_IN" name="defaultSubscription" value="OPT_IN" checked>');
    expect(page).toContain('id="def-OPT_OUT" name="defaultSubscription" value="OPT_OUT">');
    expect(page).toContain(`class="card">${csrf}<div class="field">`);
  });

  it("escapes the topic in the delete confirmation, and shows a viewer the text only", () => {
    const edit = topicView({ topic, values: { name: topic.name, description: "", defaultSubscription: "OPT_IN" }, canEdit: true, csrf }).toString();
    expect(edit).not.toContain("<script>");
    expect(edit).toContain('data-confirm="Delete the topic News&lt;script&gt;alert(1)&lt;/script&gt;&quot;? Contacts');
    const view = topicView({ topic, values: { name: "", description: "", defaultSubscription: "OPT_IN" }, canEdit: false, csrf }).toString();
    expect(view).not.toContain("<form");
    expect(view).toContain("<p>About&lt;script&gt;alert(1)&lt;/script&gt;&quot;</p><p>Only those who choose it get it (opt-in).</p>");
  });
});
