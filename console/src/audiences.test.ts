import vm from "node:vm";
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AudienceSchema } from "@mailroom/proto/common/v1/common_pb.js";
import { FormSchema } from "@mailroom/proto/audience/v1/forms_pb.js";
import { GroupSchema } from "@mailroom/proto/audience/v1/groups_pb.js";
import { EVERYONE, audienceFromForm, audienceRpc, audienceValuesOf } from "./pages/audience-picker.js";
import { audiencePickerView } from "./views/audience-picker.js";
import { formBody, valuesFromForm } from "./pages/forms.js";
import { embedSnippets } from "./views/forms.js";

describe("audience picker: form fields to the audience and back", () => {
  it("sends only the chosen mode's field, with exclusions and the topic", () => {
    const body = {
      audience: "groups", audienceGroups: ["grp_a", "grp_b"], audienceSegment: "seg_left_over", audienceFilter: '{"email":"x"}',
      audienceExcludeGroups: "grp_c", audienceExcludeSegment: "seg_x", audienceExcludeFilter: "", audienceTopic: "top_1",
    };
    expect(audienceRpc(audienceFromForm(body))).toEqual({
      all: false, groups: ["grp_a", "grp_b"], segmentId: "", filterJson: "",
      exclude: { groups: ["grp_c"], segmentId: "seg_x", filterJson: "" }, topicId: "top_1",
    });
    expect(audienceRpc(audienceFromForm({ audience: "segment", audienceSegment: "seg_1", audienceGroups: "grp_a" })))
      .toEqual({ all: false, groups: [], segmentId: "seg_1", filterJson: "", topicId: "" });
    expect(audienceRpc(audienceFromForm({ audience: "filter", audienceFilter: "" }))).toMatchObject({ all: false, filterJson: "{}" });
  });

  it("treats a missing or unknown mode as everyone", () => {
    expect(audienceFromForm({})).toEqual(EVERYONE);
    expect(audienceRpc(audienceFromForm({ audience: "nonsense" }))).toEqual({ all: true, groups: [], segmentId: "", filterJson: "", topicId: "" });
  });

  it("reads a saved audience back into the picker (and round-trips it)", () => {
    const saved = create(AudienceSchema, { groups: ["grp_a"], exclude: { segmentId: "seg_x" }, topicId: "top_1" });
    const v = audienceValuesOf(saved);
    expect(v).toMatchObject({ mode: "groups", groups: ["grp_a"], excludeSegmentId: "seg_x", topicId: "top_1" });
    expect(audienceRpc(v)).toEqual({ all: false, groups: ["grp_a"], segmentId: "", filterJson: "", exclude: { groups: [], segmentId: "seg_x", filterJson: "" }, topicId: "top_1" });
    expect(audienceValuesOf(create(AudienceSchema, { filterJson: '{"status":"SUBSCRIBED"}' })).mode).toBe("filter");
    expect(audienceValuesOf(undefined)).toEqual(EVERYONE);
  });

  it("renders the saved choice checked, with names escaped", () => {
    const page = audiencePickerView({ ...EVERYONE, mode: "groups", groups: ["grp_a"] }, {
      groups: [create(GroupSchema, { id: "grp_a", publicId: "a", displayName: "<b>VIP</b>" })], segments: [], topics: [], count: 7,
    }).toString();
    expect(page).toContain('id="aud-mode-groups" name="audience" value="groups" checked');
    expect(page).toContain('name="audienceGroups" value="grp_a" checked');
    expect(page).toContain("&lt;b&gt;VIP&lt;/b&gt;");
    expect(page).not.toContain("<b>VIP");
    expect(page).toContain('<strong id="audience-count" aria-live="polite">7</strong>');
  });
});

describe("signup forms: editor fields and embed snippets", () => {
  it("reads the asked fields with their labels and required flags; email is always first", () => {
    const v = valuesFromForm({
      name: " News ", ask: ["firstName", "plan", "email", "plan"], "label.firstName": "Your name", "required.plan": "on",
      groups: "grp_a", topics: ["top_1"], doubleOptIn: "on", redirectUrl: "https://x.test/thanks",
    });
    expect(v).toMatchObject({ name: "News", groups: ["grp_a"], topics: ["top_1"], doubleOptIn: true, redirectUrl: "https://x.test/thanks" });
    expect(formBody(v).fields).toEqual([
      { name: "email", label: "Email", required: true },
      { name: "firstName", label: "Your name", required: false },
      { name: "plan", label: "", required: true },
    ]);
    expect(valuesFromForm({ name: "x" }).doubleOptIn).toBe(false);
  });

  const form = create(FormSchema, {
    id: "frm_01", name: "News",
    fields: [{ name: "email", label: "Email", required: true }, { name: "firstName", label: 'First "name" <you>', required: false }],
  });

  it("the HTML snippet posts to the hosted endpoint with the honeypot, every label escaped", () => {
    const { html } = embedSnippets(form, "https://mail.example.com/");
    expect(html).toContain('<form action="https://mail.example.com/f/frm_01" method="post">');
    expect(html).toContain('<input id="mr-frm_01-email" name="email" type="email" required>');
    expect(html).toContain('<input id="mr-frm_01-firstName" name="firstName" type="text">');
    expect(html).toContain("First &quot;name&quot; &lt;you&gt;");
    expect(html).toMatch(/<input name="_hp" type="text" tabindex="-1" autocomplete="off">/);
  });

  it("the fetch() snippet is a script that compiles and posts JSON to the endpoint", () => {
    const { fetch: snippet } = embedSnippets(form, "https://mail.example.com");
    const script = /<script>([\s\S]*)<\/script>/.exec(snippet)![1];
    expect(() => new vm.Script(script)).not.toThrow();
    expect(script).toContain('fetch("https://mail.example.com/f/frm_01"');
    expect(script).toContain('"content-type": "application/json"');
    expect(snippet).toContain('name="_hp"');
  });
});
