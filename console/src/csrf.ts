/**
 * CSRF protection of the console. API for page modules:
 *
 *   csrfField(session)            the hidden input every POST form carries.
 *   anonymousCsrfField(request, reply, deps)  the same for forms shown before sign-in
 *                                 (sets a pre-session cookie; only sign-in needs it).
 *   CSRF_FIELD ("_csrf"), CSRF_HEADER ("x-csrf-token" for scripted requests).
 *   verifyCsrf(deps)              the hook index.ts applies to EVERY non-GET console route:
 *                                 nothing to do in page modules.
 *
 * Tokens are made and checked by @fastify/csrf (the token library under
 * @fastify/csrf-protection): salted, HMAC'd with a key derived from MAILROOM_SECRET, checked
 * in constant time. Not @fastify/csrf-protection itself: it keeps its secret in a cookie of its
 * own (or in @fastify/session), while the console's secret lives in its own sealed session
 * cookie, must never reach the browser, and a refusal here is the console's 403 page, not the
 * plugin's error; so this module keeps its hook and uses the library for the tokens only.
 *
 * The token's secret is per session and stays on the server: with a session it is an HMAC of
 * the session's random nonce (sealed in the session cookie); before sign-in it is an HMAC of a
 * random pre-session cookie (signed double submit), which stops login CSRF. On top, a browser
 * that says where the request came from (Sec-Fetch-Site, Origin) must say "this site".
 * A refusal is a 403 page.
 */
import { createHmac, randomBytes } from "node:crypto";
import Tokens from "@fastify/csrf";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { SECRET_PURPOSES, deriveKey } from "@mailroom/kit/secrets.js";
import { CONSOLE_PREFIX, type ConsoleSession } from "./types.js";
import { html, render } from "./views/html.js";

export const CSRF_FIELD = "_csrf";
export const CSRF_HEADER = "x-csrf-token";
export const PRESESSION_COOKIE = "mr_console_pre";

export function csrfField(session: Pick<ConsoleSession, "csrfToken">): string {
  return render(html`<input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">`);
}

interface CsrfKeys {
  key: Buffer;
  tokens: Tokens.TokensSimple;
}
const keysBySecret = new Map<string, CsrfKeys>();

/** The HMAC key and token maker of a MAILROOM_SECRET (derived once per secret). */
function keysOf(secret: string): CsrfKeys {
  let keys = keysBySecret.get(secret);
  if (!keys) {
    const key = deriveKey(secret, SECRET_PURPOSES.consoleCsrf);
    keys = { key, tokens: Tokens({ hmacKey: key }) };
    keysBySecret.set(secret, keys);
  }
  return keys;
}

/** The token secret of `purpose` and a random value (a session's nonce, a cookie): server-side only. */
const tokenSecret = (secret: string, purpose: string, value: string) =>
  createHmac("sha256", keysOf(secret).key).update(`${purpose}:${value}`).digest("base64url");

const createToken = (secret: string, purpose: string, value: string) =>
  keysOf(secret).tokens.create(tokenSecret(secret, purpose, value));

const tokenMatches = (secret: string, purpose: string, value: string | undefined, token: string | undefined) =>
  Boolean(value && token) && keysOf(secret).tokens.verify(tokenSecret(secret, purpose, value!), token!);

/** The token secrets of the sessions loaded (session.ts makes them; the hook checks against them). */
const sessionNonces = new WeakMap<object, { secret: string; nonce: string }>();

/**
 * A session as the console shows it, with its CSRF token: `secret` is MAILROOM_SECRET and
 * `nonce` the session's sealed random nonce. session.ts calls this for each session it loads.
 */
export function withCsrfToken<T extends object>(secret: string, nonce: string, session: T): T & { csrfToken: string } {
  const out = Object.assign(session, { csrfToken: createToken(secret, "session", nonce) });
  sessionNonces.set(out, { secret, nonce });
  return out;
}

/** The hidden input of a form shown without a session (sign-in); sets the pre-session cookie once. */
export function anonymousCsrfField(request: FastifyRequest, reply: FastifyReply, deps: Pick<GatewayDeps, "config">): string {
  let cookie = request.cookies[PRESESSION_COOKIE];
  if (!cookie || !/^[A-Za-z0-9_-]{22,64}$/.test(cookie)) {
    cookie = randomBytes(18).toString("base64url");
    reply.setCookie(PRESESSION_COOKIE, cookie, {
      path: CONSOLE_PREFIX, httpOnly: true, sameSite: "strict", secure: deps.config.publicUrl.startsWith("https:"),
    });
  }
  return csrfField({ csrfToken: createToken(deps.config.secret, "pre", cookie) });
}

const forbidden = (message: string) => refusal({ code: "forbidden", status: 403, message });

/** Origins this console is served under: the public URL's, and the one the request came to. */
function ownOrigins(request: FastifyRequest, publicUrl: string): string[] {
  const out: string[] = [];
  try {
    out.push(new URL(publicUrl).origin);
  } catch { /* a bad public URL is config's problem; the request's own origin still counts */ }
  out.push(`${request.protocol}://${request.host}`);
  return out;
}

/** The token a form or script sent: the form field, else the header. */
function sentToken(request: FastifyRequest): string | undefined {
  const body = request.body as Record<string, unknown> | undefined;
  const field = body && typeof body === "object" ? body[CSRF_FIELD] : undefined;
  if (typeof field === "string") return field;
  const header = request.headers[CSRF_HEADER];
  return typeof header === "string" ? header : undefined;
}

/** A browser that says where a form came from must say "this site" (Sec-Fetch-Site, Origin); else a 403. */
export function assertSameSite(request: FastifyRequest, publicUrl: string): void {
  const site = request.headers["sec-fetch-site"];
  if (typeof site === "string" && site !== "same-origin" && site !== "none") {
    throw forbidden("This form was sent from another site. Open the console and try again.");
  }
  const origin = request.headers.origin;
  // "null" is an opaque origin (a sandboxed frame, such as a rendered email): never this console.
  if (typeof origin === "string" && !ownOrigins(request, publicUrl).includes(origin)) {
    throw forbidden("This form was sent from another site. Open the console and try again.");
  }
}

/**
 * Signed double submit for a form outside the console's scope (the development inbox):
 * the token a form carries for the random `cookie` it was shown with, under `purpose`.
 */
export function doubleSubmitToken(secret: string, purpose: string, cookie: string): string {
  return createToken(secret, `other:${purpose}`, cookie);
}

/** Whether `token` is one doubleSubmitToken gives for this cookie (both present). */
export function doubleSubmitMatches(secret: string, purpose: string, cookie: string | undefined, token: string | undefined): boolean {
  return tokenMatches(secret, `other:${purpose}`, cookie, token);
}

/** preHandler for the whole console scope (after the body is parsed and the session loaded). */
export function verifyCsrf(deps: Pick<GatewayDeps, "config">) {
  return async function checkCsrf(request: FastifyRequest): Promise<void> {
    if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return;
    assertSameSite(request, deps.config.publicUrl);
    const session = request.consoleSession;
    // Signing out with no session left has nothing to protect.
    if (!session && request.routeOptions.config.consoleWithoutSession) return;
    const token = sentToken(request);
    let valid = false;
    if (session) {
      const bound = sessionNonces.get(session);
      valid = !!bound && tokenMatches(bound.secret, "session", bound.nonce, token);
    } else {
      valid = tokenMatches(deps.config.secret, "pre", request.cookies[PRESESSION_COOKIE], token);
    }
    if (!valid) throw forbidden("The form expired or did not come from this console. Reload the page and try again.");
  };
}
