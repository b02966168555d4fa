import { describe, expect, it } from "vitest";
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { segmentEditorView, segmentListView, segmentView } from "./segments.js";

const HOSTILE = '<script>alert(1)</script>"';
const segment = { id: "seg_1", name: `VIP${HOSTILE}`, filterJson: JSON.stringify({ email: { contains: HOSTILE } }) } as Segment;
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("segments views", () => {
  it("escapes the segment's name, its filter and its contacts", () => {
    const page = segmentView({
      segment, count: 1, canEdit: true, csrf,
      contacts: [{ id: "ctc_1", email: `a${HOSTILE}`, firstName: HOSTILE, lastName: "", status: ContactStatus.SUBSCRIBED } as never],
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<h1>VIP&lt;script&gt;alert(1)&lt;/script&gt;&quot;</h1>");
    expect(page).toContain('data-confirm="Delete the segment VIP&lt;script&gt;alert(1)&lt;/script&gt;&quot;? Its contacts stay.">');
    expect(page).toContain("&quot;contains&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;\\&quot;&quot;");
    expect(page).toContain('<td data-label="Name">&lt;script&gt;');
    expect(page).toContain('<strong id="segment-count">1</strong> contact matches now.');
  });

  it("escapes names in the list and the editor, and puts the builder's markup in as it is", () => {
    const list = segmentListView({ segments: [segment], counts: [undefined], canEdit: false }).toString();
    expect(list).toContain(">VIP&lt;script&gt;alert(1)&lt;/script&gt;&quot;</a>");
    expect(list).toContain('<td data-label="Contacts" class="num">—</td>');
    expect(list).not.toContain("New segment");
    const editor = segmentEditorView({ segment, name: HOSTILE, builder: '<section id="fb"></section>', csrf }).toString();
    expect(editor).not.toContain("<script>");
    expect(editor).toContain("<h1>Edit VIP&lt;script&gt;");
    expect(editor).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(editor).toContain('<section id="fb"></section>');
    expect(editor).toContain('action="/console/segments/seg_1" id="segment-form">');
  });
});
