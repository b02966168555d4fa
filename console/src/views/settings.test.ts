import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { WorkspaceSchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { settingsView } from "./settings.js";

const HOSTILE = '<script>alert(1)</script>"';
const ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;";
const ESCAPED_RE = ESCAPED.replace(/[()]/g, "\\$&");
const csrf = '<input type="hidden" name="_csrf" value="t">';

describe("settings view", () => {
  const workspace = create(WorkspaceSchema, { id: "ws_1", name: HOSTILE, timezone: HOSTILE, monthlyLimit: 1000n, banned: true, bannedReason: HOSTILE });

  it("escapes the form's values, its error, the operator's hold and the system sender", () => {
    const page = settingsView({
      workspace, usage: { used: 10n, limit: 1000n, period: HOSTILE }, systemSender: { from: "s@x.test", fromName: HOSTILE },
      form: { csrf, values: { name: HOSTILE, timezone: HOSTILE }, error: { field: "timezone", message: HOSTILE } },
    }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain(`<div class="flash error" role="alert" id="settings-error">${ESCAPED}</div>`);
    expect(page).toMatch(new RegExp(`id="ws-name"[^>]*value="${ESCAPED_RE}"[^>]*aria-describedby="ws-name-h"`));
    expect(page).toMatch(new RegExp(`id="ws-tz"[^>]*value="${ESCAPED_RE}"[^>]* aria-invalid="true" aria-describedby="ws-tz-h settings-error"`));
    expect(page).toContain(`: ${ESCAPED}</p>`);
    expect(page).toContain(`<code>${ESCAPED} &lt;s@x.test&gt;</code>`);
    expect(page).toContain(`emails sent in ${ESCAPED} <span class="badge ok">1% used</span>`);
    expect(page).toContain('<option value="UTC">');
  });

  it("shows the settings read only to who may not change them", () => {
    const page = settingsView({ workspace }).toString();
    expect(page).not.toContain("<form");
    expect(page).toContain(`<dd style="margin:0 0 .5rem">${ESCAPED}</dd>`);
    expect(page).toContain("This month's usage could not be read just now");
    expect(page).toContain("none configured");
  });
});
