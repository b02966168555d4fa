import { describe, expect, it } from "vitest";
import { consolePage, plainPage, statusBadge, statusWords } from "./layout.js";
import type { ConsoleSession } from "./types.js";

/** The page shell: the nav's phone toggle, the favicon, status badges in words, the wrapping rules. */
const session = (role: ConsoleSession["role"]): ConsoleSession => ({
  kind: "member", workspaceId: "ws_a", workspaceName: "Acme <EU>", keyId: "", keyName: "", scopes: ["api_user", "api_read"], role,
  memberEmail: "ops@acme.test", actor: "member:mbr_a", canEdit: role !== "VIEWER", csrfToken: "tok", expiresAt: new Date(0),
});

describe("console layout", () => {
  it("folds the nav behind a CSS-only Menu toggle that names the current page, keeping every link", () => {
    const page = consolePage({ title: "Settings", session: session("OWNER"), active: "settings", body: "<p>x</p>" });
    expect(page).toMatch(/<input type="checkbox" id="nav-open" class="nav-toggle" aria-controls="console-nav"><label for="nav-open" class="nav-button">Menu<span class="current"><span class="sr-only">, current page: <\/span>Settings<\/span><\/label>\s*<nav class="main" id="console-nav"/);
    // The toggle only hides the nav below the breakpoint; the links are all in the markup.
    expect(page).toContain(".nav-toggle:not(:checked)~nav.main{display:none}");
    expect(page).toMatch(/@media \(max-width:47\.99rem\)\{[^@]*\.nav-toggle:not\(:checked\)~nav\.main/);
    for (const path of ["/domains", "/webhooks", "/keys", "/team", "/audit", "/settings", "/sessions"]) expect(page).toContain(`<a href="/console${path}"`);
    expect(page).toContain('<a href="/console/settings" aria-current="page">Settings</a>');
    expect(page).toContain("Acme &lt;EU&gt;");
    expect(page).not.toContain("<script>alert");
  });

  it("links every section to its page of the documentation, which the gateway serves", async () => {
    const { renderDocs } = await import("../../gateway/src/routes/docs-pages.js");
    const pages = renderDocs();
    for (const active of ["broadcasts", "contacts", "automations", "received", "settings", "keys"] as const) {
      const page = consolePage({ title: "x", session: session("OWNER"), active, body: "" });
      const docs = /<li><a href="\/docs\/([a-z-]+)" target="_blank" rel="noopener">Docs<\/a><\/li>/.exec(page);
      expect(docs, active).not.toBeNull();
      expect(pages.has(docs![1]!), `${active}: /docs/${docs![1]}`).toBe(true);
    }
    expect(consolePage({ title: "x", session: session("VIEWER"), active: "overview", body: "" })).toContain('<a href="/docs" target="_blank" rel="noopener">Docs</a>');
  });

  it("has an inline SVG favicon on every page, signed in or not", () => {
    for (const page of [consolePage({ title: "x", session: session("VIEWER"), active: "overview", body: "" }), plainPage({ title: "Sign in", body: "" })]) {
      const href = /<link rel="icon" href="([^"]+)">/.exec(page)?.[1] ?? "";
      expect(href).toMatch(/^data:image\/svg\+xml,/);
      expect(decodeURIComponent(href.slice("data:image/svg+xml,".length))).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
      expect(href).not.toMatch(/["<>#]/);
    }
  });

  it("shows status enum names as words, and leaves other text alone", () => {
    expect(statusWords("IN_PROGRESS")).toBe("In progress");
    expect(statusWords("FAILED")).toBe("Failed");
    expect(statusWords("OPT_IN")).toBe("Opt in");
    for (const text of ["A/B", "200", "Pending DNS", "softfail", "OK", "81% used"]) expect(statusWords(text)).toBe(text);
    expect(statusBadge("SCHEDULED", "info")).toBe('<span class="badge info">Scheduled</span>');
    expect(statusBadge("<b>", "bad")).toBe('<span class="badge bad">&#60;b&#62;</span>');
  });

  it("wraps long tokens anywhere only in code; normal text breaks between words; DNS names stay whole", () => {
    const page = plainPage({ title: "x", body: "" });
    expect(page).toMatch(/body\{[^}]*overflow-wrap:break-word/);
    expect(page).not.toMatch(/body\{[^}]*overflow-wrap:anywhere/);
    expect(page).toMatch(/code,pre\{[^}]*overflow-wrap:anywhere/);
    expect(page).toMatch(/code\.value\.one-line\{white-space:nowrap;word-break:keep-all;overflow-wrap:normal;overflow-x:auto/);
  });
});
