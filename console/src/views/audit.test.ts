import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AuditEntrySchema } from "@mailroom/proto/accounts/v1/team_pb.js";
import { auditView } from "./audit.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";

describe("audit log view", () => {
  it("escapes who, what, the change and the filters typed", () => {
    const entry = create(AuditEntrySchema, {
      actor: { kind: "member", id: "mbr_1", label: "" }, action: HOSTILE, resource: { type: HOSTILE, id: HOSTILE },
      summary: { [HOSTILE]: HOSTILE, secret: "" }, requestId: HOSTILE,
    });
    const page = auditView([entry], new Map([["mbr_1", HOSTILE]]), { actor: HOSTILE, resource: "", since: "", until: "" }, "", "next1").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<td data-label="Who">${ESCAPED}<br><span class="muted">member:mbr_1</span></td>`);
    expect(page).toContain(`<code>${ESCAPED}</code>: ${ESCAPED}<br><code>secret</code>: <span class="muted">(withheld)</span>`);
    expect(page).toContain(`<td data-label="Resource">${ESCAPED}:<code>${ESCAPED}</code></td>`);
    expect(page).toContain(`name="actor" value="${ESCAPED}"`);
    expect(page).toContain("&amp;page=next1\">Older entries</a>");
    expect(page).not.toContain("Newest entries");
  });

  it("says when nothing matches", () => {
    expect(auditView([], new Map(), { actor: "", resource: "", since: "2030-01-01", until: "" }, "", "").toString()).toContain("No entries match these filters.");
    expect(auditView([], new Map(), { actor: "", resource: "", since: "", until: "" }, "", "").toString()).toContain("No entries yet.");
  });
});
