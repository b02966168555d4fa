import { describe, expect, it } from "vitest";
import { checkEmailView, magicLinkView, signInView } from "./sign-in.js";

const HOSTILE = '"><script>alert(1)</script>';
const CSRF = '<input type="hidden" name="_csrf" value="tok">';

describe("sign-in views", () => {
  it("escapes the next page and the provider's name, keeping the forms' fields", () => {
    const page = signInView({ csrf: CSRF, next: `/console/x${HOSTILE}`, magicLink: { mailed: true }, oidcName: `Acme ${HOSTILE}` }).toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('<input type="hidden" name="next" value="/console/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">');
    expect(page).toContain("Sign in with Acme &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a>");
    expect(page).toContain(`href="/console/oidc/start?next=${encodeURIComponent(`/console/x${HOSTILE}`)}"`);
    // Both forms carry the CSRF input and next; the email form is there when links reach someone.
    expect(page.match(/<input type="hidden" name="_csrf" value="tok"><input type="hidden" name="next"/g)).toHaveLength(2);
    expect(page).toContain('<form method="post" action="/console/sign-in/email" class="card">');
    expect(page).toContain('<label for="apiKey">API key</label>');
    expect(page).not.toContain("Development: the link is printed");
  });

  it("offers only what is configured", () => {
    const keyOnly = signInView({ csrf: CSRF, next: "/console" }).toString();
    expect(keyOnly).not.toContain("/console/sign-in/email");
    expect(keyOnly).not.toContain("/console/oidc/start");
    expect(signInView({ csrf: CSRF, next: "/console", magicLink: { mailed: false } }).toString()).toContain("(Development: the link is printed in the gateway's log.)");
  });

  it("escapes the address asked for, and the magic link's token", () => {
    const sent = checkEmailView(`a${HOSTILE}@example.test`, "/console").toString();
    expect(sent).not.toContain("<script>");
    expect(sent).toContain("<strong>a&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;@example.test</strong>");
    const landing = magicLinkView(`t${HOSTILE}`, CSRF).toString();
    expect(landing).not.toContain("<script>");
    expect(landing).toContain(`action="/console/magic/${encodeURIComponent(`t${HOSTILE}`)}"`);
    expect(landing).toContain(`${CSRF}<button type="submit">Continue to the console</button>`);
  });
});
