import { describe, expect, it } from "vitest";
import type { Group } from "@mailroom/proto/audience/v1/groups_pb.js";
import { ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { groupListView, groupView } from "./groups.js";

const HOSTILE = '<script>alert(1)</script>"';
const group = { id: "grp_01", publicId: `pub${HOSTILE}`, displayName: `Name${HOSTILE}` } as Group;
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("groups views", () => {
  it("escapes a group's names in the list and in the create form's values", () => {
    const page = groupListView({ groups: [group], counts: [3], canEdit: true, csrf, values: { publicId: HOSTILE, displayName: "x" } }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("Name&lt;script&gt;alert(1)&lt;/script&gt;&quot;</a>");
    expect(page).toContain("<code>pub&lt;script&gt;");
    expect(page).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(page).toContain(`${csrf}\n<div class="grid">`);
    expect(page).toContain('<td data-label="Contacts" class="num" data-members>3</td>');
  });

  it("escapes members and names in attributes on a group's page", () => {
    const page = groupView({
      group, count: 1, canEdit: true, csrf,
      members: [
        { member: { contactId: "ctc_1" } as never, contact: { id: "ctc_1", email: `a${HOSTILE}@x.test`, firstName: HOSTILE, lastName: "", status: ContactStatus.SUBSCRIBED } as never },
        { member: { contactId: `ctc_${HOSTILE}` } as never },
      ],
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('aria-label="Remove a&lt;script&gt;alert(1)&lt;/script&gt;&quot;@x.test from the group"');
    expect(page).toContain('data-confirm="Delete the group Name&lt;script&gt;alert(1)&lt;/script&gt;&quot;? Its contacts stay');
    expect(page).toContain('name="displayName" maxlength="200" value="Name&lt;script&gt;');
    expect(page).toContain("<code>ctc_&lt;script&gt;");
    expect(page).toContain('<strong id="member-count">1</strong> contact in this group.');
  });

  it("shows no forms to a viewer", () => {
    const page = groupView({ group, members: [], canEdit: false, csrf }).toString();
    expect(page).not.toContain("<form");
    expect(page).toContain("No contacts in this group yet.");
    expect(page).toContain('<strong id="member-count">—</strong>');
  });
});
