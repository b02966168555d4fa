import { describe, expect, it } from "vitest";
import { trusted } from "./html.js";
import { consoleDocument, flashView, plainDocument } from "./layout.js";

const HOSTILE = '"><script>alert(1)</script>';
const ESCAPED = "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;";

describe("page shell views", () => {
  it("escapes the title, workspace, who is signed in and the flash; the body and CSRF input go in as built", () => {
    const page = consoleDocument({
      title: `T${HOSTILE}`, workspace: `W${HOSTILE}`, readOnly: true, who: `m${HOSTILE}@example.test`, role: "VIEWER",
      links: [{ href: "/console/x", label: "X", current: true }, { href: "/console/y", label: "Y", current: false }],
      currentLabel: "X", docsHref: "/docs/api",
      signOut: trusted('<input type="hidden" name="_csrf" value="tok">'),
      flash: flashView({ kind: "error", message: `F${HOSTILE}` }),
      body: trusted("<p>body</p>"),
    }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain(`<title>T${ESCAPED} · Mailroom</title>`);
    expect(page).toContain(`Workspace: <strong>W${ESCAPED}</strong> (read only)\n· m${ESCAPED}@example.test (VIEWER)</span>`);
    expect(page).toContain(`<div class="flash error" role="alert">F${ESCAPED}</div><p>body</p></main>`);
    expect(page).toContain('<li><a href="/console/x" aria-current="page">X</a></li><li><a href="/console/y">Y</a></li>');
    expect(page).toContain('<form method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="tok"><button type="submit">Sign out</button></form>');
    // The inline style and script are the shell's own, not escaped.
    expect(page).toContain('content:attr(data-label) ": "');
    expect(page).toMatch(/<script>document\.addEventListener\("click"/);
  });

  it("says ok flashes politely, and nothing without one", () => {
    expect(flashView({ kind: "ok", message: 'Saved "x"' }).toString()).toBe('<div class="flash" role="status">Saved &quot;x&quot;</div>');
    expect(flashView(undefined)).toBe("");
    const plain = plainDocument({ title: "Sign in", flash: "", body: trusted("<h1>x</h1>") }).toString();
    expect(plain).toContain('<main id="content" tabindex="-1" style="max-width:34rem"><h1>x</h1></main>');
  });
});
