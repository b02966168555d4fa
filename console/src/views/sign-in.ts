/**
 * Sign-in (/console/sign-in, /console/magic/<token>): the views. The handlers are pages/sign-in.ts.
 */
import { CONSOLE_PREFIX } from "../types.js";
import { html, trusted, type Html } from "./html.js";

export interface SignInViewOptions {
  /** The form's hidden CSRF input (anonymousCsrfField). */
  csrf: string;
  /** The console page to go to once signed in (already a safe console path). */
  next: string;
  /** Sign-in by email link: whether links are mailed (else only printed in the gateway's log); absent when not offered. */
  magicLink?: { mailed: boolean };
  /** The OpenID Connect provider's display name, when configured. */
  oidcName?: string;
}

/** The sign-in page's body: OpenID Connect, an email link, an API key (whichever are offered). */
export function signInView({ csrf, next, magicLink, oidcName }: SignInViewOptions): Html {
  const hidden = html`${trusted(csrf)}<input type="hidden" name="next" value="${next}">`;
  const magic = magicLink ? html`<form method="post" action="${CONSOLE_PREFIX}/sign-in/email" class="card">
${hidden}<h2 id="email-h" style="margin-top:0">With your email</h2>
<div class="field"><label for="email">Email address</label>
<input id="email" name="email" type="email" required autocomplete="email" spellcheck="false" autocapitalize="off" style="width:100%" aria-describedby="emailHelp">
<p id="emailHelp" class="muted">Members of a workspace get a sign-in link that works once, for 15 minutes.${magicLink.mailed ? "" : html` (Development: the link is printed in the gateway's log.)`}</p></div>
<button type="submit">Email me a sign-in link</button>
</form>` : "";
  const oidc = oidcName ? html`<p><a class="button" href="${CONSOLE_PREFIX}/oidc/start?next=${encodeURIComponent(next)}">Sign in with ${oidcName}</a></p>` : "";
  return html`<h1>Sign in to the console</h1>
${oidc}${magic}
<form method="post" action="${CONSOLE_PREFIX}/sign-in" class="card">
${hidden}<h2 id="key-h" style="margin-top:0">With an API key</h2>
<p class="muted">For bootstrap and development: the console then acts as the key, with its role. A read-only (VIEWER) key can look but not change anything.</p>
<div class="field"><label for="apiKey">API key</label>
<input id="apiKey" name="apiKey" type="password" required autocomplete="current-password" spellcheck="false" autocapitalize="off" style="width:100%" aria-describedby="apiKeyHelp">
<p id="apiKeyHelp" class="muted">It starts with <code>mr_</code>. It is checked once and never stored in your browser.</p></div>
<button type="submit">Sign in</button>
</form>`;
}

/** After asking for a link: the same answer whether or not the address is a member. */
export function checkEmailView(email: string, next: string): Html {
  return html`<h1>Check your email</h1>
<p>If <strong>${email}</strong> is a member of a workspace here, a sign-in link is on its way. It works once, for 15 minutes.</p>
<p><a href="${CONSOLE_PREFIX}/sign-in?next=${encodeURIComponent(next)}">Back to sign-in</a></p>`;
}

/** A magic link's landing page: only a button (mail scanners fetch links; the POST signs in). */
export function magicLinkView(token: string, csrf: string): Html {
  return html`<h1>Sign in to the console</h1>
<p>Continue to sign in with this link. It works once.</p>
<form method="post" action="${CONSOLE_PREFIX}/magic/${encodeURIComponent(token)}" class="card">
${trusted(csrf)}<button type="submit">Continue to the console</button></form>`;
}
