import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { MemberSchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { keyCreatedView, keyListView } from "./keys.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("API keys views", () => {
  it("escapes key names, owners and what was typed, in text and attributes", () => {
    const key = create(ApiKeySchema, { id: "key_1", name: HOSTILE, prefix: "mr_live_ab", scopes: ["api_user"], ownerMemberId: "mbr_1" });
    const member = create(MemberSchema, { id: "mbr_1", email: `${HOSTILE}@x.test`, role: "OWNER", status: "ACTIVE" });
    const page = keyListView({
      rows: [{ key, role: "EDITOR", owner: member, current: true, revocable: true }],
      members: [member], manage: true, roles: ["ADMIN", "EDITOR", "VIEWER"], csrf,
      values: { name: HOSTILE, role: "ADMIN", owner: "mbr_1" },
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<td data-label="Name">${ESCAPED} <span class="badge info">This session</span>`);
    expect(page).toContain(`<td data-label="Owner">${ESCAPED}@x.test</td>`);
    expect(page).toContain(`data-confirm="Revoke the key ${ESCAPED}? Whatever`);
    expect(page).toContain(`aria-label="Revoke the key ${ESCAPED}">Revoke</button>`);
    expect(page).toContain(`name="name" required maxlength="200" value="${ESCAPED}"`);
    expect(page).toContain('<option value="ADMIN" selected>');
    expect(page).toContain(`<option value="mbr_1" selected>${ESCAPED}@x.test (OWNER)</option>`);
  });

  it("shows no form and no revoke buttons to who does not manage keys", () => {
    const key = create(ApiKeySchema, { id: "key_1", name: "CI", prefix: "mr_live_ab", scopes: [] });
    const page = keyListView({ rows: [{ key, role: "VIEWER", current: false, revocable: true }], members: [], manage: false, roles: [], csrf, values: { name: "", role: "VIEWER", owner: "" } }).toString();
    expect(page).not.toContain("<form");
    expect(page).toContain("no scope");
    expect(page).toContain("Only owners and admins create and revoke keys.");
  });

  it("escapes the created key's name and secret", () => {
    const page = keyCreatedView(create(ApiKeySchema, { name: HOSTILE }), "EDITOR", `mr_${HOSTILE}`).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<strong>${ESCAPED}</strong> (EDITOR)`);
    expect(page).toContain(`data-copy="mr_${ESCAPED}"`);
  });
});
