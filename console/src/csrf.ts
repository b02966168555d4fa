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
 * Synchronizer tokens: with a session, the token is an HMAC of the session's random nonce
 * (sealed in the session cookie, so it never leaves the server readable); before sign-in it
 * is an HMAC of a random pre-session cookie (signed double submit), which stops login CSRF.
 * On top, a browser that says where the request came from (Sec-Fetch-Site, Origin) must
 * say "this site". A refusal is a 403 page.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { SECRET_PURPOSES, deriveKey } from "@mailroom/kit/secrets.js";
import { escapeHtml } from "@mailroom/http/page.js";
import { CONSOLE_PREFIX, type ConsoleSession } from "./types.js";

export const CSRF_FIELD = "_csrf";
export const CSRF_HEADER = "x-csrf-token";
export const PRESESSION_COOKIE = "mr_console_pre";

export function csrfField(session: Pick<ConsoleSession, "csrfToken">): string {
  return `<input type="hidden" name="${CSRF_FIELD}" value="${escapeHtml(session.csrfToken)}">`;
}

const preSessionToken = (secret: string, cookie: string) =>
  createHmac("sha256", deriveKey(secret, SECRET_PURPOSES.consoleCsrf)).update(`pre:${cookie}`).digest("base64url");

/** The hidden input of a form shown without a session (sign-in); sets the pre-session cookie once. */
export function anonymousCsrfField(request: FastifyRequest, reply: FastifyReply, deps: Pick<GatewayDeps, "config">): string {
  let cookie = request.cookies[PRESESSION_COOKIE];
  if (!cookie || !/^[A-Za-z0-9_-]{22,64}$/.test(cookie)) {
    cookie = randomBytes(18).toString("base64url");
    reply.setCookie(PRESESSION_COOKIE, cookie, {
      path: CONSOLE_PREFIX, httpOnly: true, sameSite: "strict", secure: deps.config.publicUrl.startsWith("https:"),
    });
  }
  return csrfField({ csrfToken: preSessionToken(deps.config.secret, cookie) });
}

const forbidden = (message: string) => refusal({ code: "forbidden", status: 403, message });

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

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
  return createHmac("sha256", deriveKey(secret, SECRET_PURPOSES.consoleCsrf)).update(`${purpose}:${cookie}`).digest("base64url");
}

/** Whether `token` is the one doubleSubmitToken gives for this cookie (both present). */
export function doubleSubmitMatches(secret: string, purpose: string, cookie: string | undefined, token: string | undefined): boolean {
  return Boolean(cookie && token) && same(token!, doubleSubmitToken(secret, purpose, cookie!));
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
    let expected: string | undefined;
    if (session) expected = session.csrfToken;
    else {
      const cookie = request.cookies[PRESESSION_COOKIE];
      if (cookie) expected = preSessionToken(deps.config.secret, cookie);
    }
    if (!token || !expected || !same(token, expected)) {
      throw forbidden("The form expired or did not come from this console. Reload the page and try again.");
    }
  };
}
