import { describe, expect, it } from "vitest";
import { auditSubject, toAuditEntry } from "./audit.js";

describe("AUDIT stream contract", () => {
  it("one subject per workspace; ids generated when absent; actor label optional", () => {
    expect(auditSubject("ws_a")).toBe("audit.ws_a");
    for (const bad of ["", "a.b", "a b", "a*", ">"]) expect(() => auditSubject(bad)).toThrow(/cannot be a subject token/);
    const entry = toAuditEntry({ workspaceId: "ws_a", at: new Date("2026-01-02T03:04:05Z"), actor: { kind: "cli", id: "ops" }, action: "member.invite", resource: { type: "member", id: "mbr_1" }, summary: { role: "ADMIN" } });
    expect(entry.id).toMatch(/^aud_[0-9a-z]{26}$/);
    expect(entry).toMatchObject({ workspaceId: "ws_a", actor: { kind: "cli", id: "ops", label: "" }, action: "member.invite", resource: { type: "member", id: "mbr_1" }, requestId: "", summary: { role: "ADMIN" } });
    expect(toAuditEntry({ id: "aud_x", workspaceId: "ws_a", at: new Date(), actor: { kind: "system", id: "" }, action: "a.b", resource: { type: "t", id: "i" } }).id).toBe("aud_x");
  });
});
