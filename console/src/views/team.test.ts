import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { MemberSchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { invitationView, invitedView, teamView } from "./team.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("team views", () => {
  it("escapes members' addresses, in text and attributes", () => {
    const member = create(MemberSchema, { id: "mbr_1", email: HOSTILE, role: "EDITOR", status: "INVITED" });
    const page = teamView({ rows: [{ member, role: "EDITOR", you: true, manageable: true }], manage: true, grantable: ["ADMIN", "EDITOR", "VIEWER"], csrf, mails: false }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<td data-label="Member">${ESCAPED} <span class="badge info">You</span></td>`);
    expect(page).toContain(`<select id="role-mbr_1" name="role" aria-label="Role of ${ESCAPED}">`);
    expect(page).toContain(`aria-label="Change the role of ${ESCAPED}">Change role</button>`);
    expect(page).toContain(`data-confirm="Remove ${ESCAPED}? They are signed out at once."`);
    expect(page).toContain('<select id="invite-role" name="role"><option value="ADMIN">ADMIN</option><option value="EDITOR" selected>EDITOR</option>');
    expect(page).toContain("No system sender is configured");
  });

  it("shows no actions to who does not manage the team", () => {
    const member = create(MemberSchema, { id: "mbr_1", email: "ann@x.test", role: "OWNER", status: "ACTIVE" });
    const page = teamView({ rows: [{ member, role: "OWNER", you: false, manageable: false }], manage: false, grantable: [], csrf, mails: true }).toString();
    expect(page).not.toContain("<form");
    expect(page).not.toContain("<th>Actions</th>");
    expect(page).toContain("Only owners and admins invite");
  });

  it("escapes the invitation's address and link, and the token in the accept form's action", () => {
    const done = invitedView(HOSTILE, "VIEWER", true, `https://x.test/${HOSTILE}`, undefined).toString();
    expect(done).not.toContain("<script>");
    expect(done).toContain(`<p>${ESCAPED} is invited as <strong>VIEWER</strong>. The invitation is on its way by email.</p>`);
    expect(done).toContain(`data-copy="https://x.test/${ESCAPED}"`);
    expect(done).toContain("until in 72 hours");
    const accept = invitationView(HOSTILE, csrf).toString();
    expect(accept).toContain(`action="/console/invite/${encodeURIComponent(HOSTILE).replace(/'/g, "&#39;")}"`);
    expect(accept).toContain(`${csrf}<button type="submit">Accept the invitation</button>`);
  });
});
