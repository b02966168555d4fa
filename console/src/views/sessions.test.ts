import { describe, expect, it } from "vitest";
import type { ConsoleSession } from "../types.js";
import { keySessionView, memberSessionsView } from "./sessions.js";

const member = { kind: "member", memberId: "mem_1", sessionId: "ses_1", memberEmail: "ann@example.test", role: "OWNER", workspaceId: "ws_1" } as ConsoleSession;

describe("sessions views", () => {
  it("escapes what a key or a browser named itself", () => {
    const key = keySessionView({ kind: "key", keyName: "<b>ops</b>", keyId: "key_1", role: "VIEWER" } as ConsoleSession).toString();
    expect(key).toContain("<strong>&lt;b&gt;ops&lt;/b&gt;</strong>");
    const page = memberSessionsView(member, [
      { id: "ses_1", current: true, method: "magic_link", userAgent: '"><script>x()</script>', ip: "127.0.0.1" },
    ] as never, '<input type="hidden" name="_csrf" value="t">').toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("&lt;script&gt;x()&lt;/script&gt;");
    expect(page).toContain('aria-label="Sign out the session from &quot;&gt;&lt;script&gt;');
    expect(page).toContain('<input type="hidden" name="_csrf" value="t"><button');
    expect(page).toContain("This browser");
    expect(page).toContain("Email link");
    expect(page).toContain('action="/console/sessions/ses_1/revoke"');
  });

  it("says so when there is no session to list", () => {
    expect(memberSessionsView(member, [], "").toString()).toContain('<tr><td colspan="6">No sessions.</td></tr>');
  });
});
