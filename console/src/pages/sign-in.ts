/**
 * Console sign-in and sign-out (DESIGN §9.9):
 *
 * - magic link: POST /sign-in/email asks the team for a link (StartMagicLink) and mails it
 *   (system-mail.ts); the page answers the same whether or not the address is a member. The
 *   link (GET /magic/<token>) only shows a button — mail scanners fetch links — and its POST
 *   redeems the token (RedeemMagicLink: single use, 15 minutes) for a member session.
 * - OpenID Connect (MAILROOM_OIDC_*): GET /oidc/start → the provider → GET /oidc/callback
 *   (oidc.ts checks the flow and the ID token) → SignInWithOidc maps the verified email claim
 *   to a member.
 * - API key (bootstrap, development, CLI-created keys): the session acts as the key, with its
 *   effective role. A refused key costs the client address one attempt of the gateway's
 *   failed-key limiter (a 429 page when none are left), as on /v1.
 *
 * Sign-out revokes a member's session at the team (accounts unit), then clears the cookie.
 * The markup is views/sign-in.ts; what a refused link says is link-refusal.ts.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { AddressAttempts } from "@mailroom/kit/token-bucket.js";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ConsoleDeps } from "../deps.js";
import { anonymousCsrfField, PRESESSION_COOKIE } from "../csrf.js";
import { CONSOLE_PREFIX, plainPage, type Flash } from "../layout.js";
import { LINK_MESSAGES, linkRefusal } from "../link-refusal.js";
import { cookieOptions, safeNext, seeOther, setFlash } from "../session.js";
import type { ConsoleMail } from "../system-mail.js";
import { createOidcSignIn, OidcSignInError, type OidcSignIn } from "../oidc.js";
import { render } from "../views/html.js";
import { checkEmailView, magicLinkView, signInView } from "../views/sign-in.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** A console POST that may come without a session and then needs no CSRF token (sign-out). */
    consoleWithoutSession?: boolean;
  }
}

const KEY_SHAPE = /^[A-Za-z0-9_\-.~+/=]{8,256}$/;
const EMAIL_SHAPE = /^[^\s@<>",;]{1,64}@[^\s@<>",;]{1,253}$/;
/** Tokens are URL-safe text; anything else is not worth a lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9_\-.~]{16,1024}$/;
/** Answers of the accounts unit that mean "no such key". */
const UNKNOWN_KEY = [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument];

const html = (reply: FastifyReply) => reply.type("text/html; charset=utf-8");

interface SignInContext {
  deps: ConsoleDeps;
  mail: ConsoleMail;
  oidc?: OidcSignIn;
}

/** Magic links are offered when they reach someone: mailed, or printed in development. */
const offersMagicLink = (ctx: SignInContext) => ctx.mail.sends || ctx.mail.logsLinks;

function signInPage(request: FastifyRequest, reply: FastifyReply, ctx: SignInContext, next: string, flash?: Flash): string {
  const body = signInView({
    csrf: anonymousCsrfField(request, reply, ctx.deps),
    next,
    magicLink: offersMagicLink(ctx) ? { mailed: ctx.mail.sends } : undefined,
    oidcName: ctx.oidc?.name,
  });
  return plainPage({ title: "Sign in", body: render(body), flash });
}

export function registerSignInPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const settings = deps.consoleSignIn ?? {};
  const ctx: SignInContext = {
    deps,
    mail: deps.mail,
    oidc: settings.oidc ? createOidcSignIn(settings.oidc, deps.config) : undefined,
  };
  // Sign-in mail per client address (MAILROOM_AUTH_FAILURES_PER_MINUTE) and a quarter of that per
  // address asked for: nobody mail-bombs a member through the form.
  const perMinute = deps.authFailuresPerMinute || 20;
  const perClient = new AddressAttempts(perMinute);
  const perEmail = new AddressAttempts(Math.max(1, Math.ceil(perMinute / 4)));
  const userAgent = (request: FastifyRequest) => String(request.headers["user-agent"] ?? "").slice(0, 256);

  scope.get("/sign-in", async (request, reply) => {
    const next = safeNext((request.query as Record<string, unknown>).next);
    if (request.consoleSession) return seeOther(reply, next);
    return html(reply).send(signInPage(request, reply, ctx, next, request.consoleFlash));
  });

  scope.post("/sign-in", async (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    const apiKey = typeof form.apiKey === "string" ? form.apiKey.trim() : "";
    const refuse = (message: string) => html(reply.code(401)).send(signInPage(request, reply, ctx, next, { kind: "error", message }));
    if (!apiKey) return html(reply.code(400)).send(signInPage(request, reply, ctx, next, { kind: "error", message: "Enter an API key." }));
    // Throws a 429 page when this address has no attempts left.
    deps.failures?.attempt(request.ip, reply);
    if (!KEY_SHAPE.test(apiKey)) return refuse("That API key is not valid.");
    let auth;
    try {
      auth = await deps.clients.accounts.authenticate({ apiKey }, rpcOptions(request));
    } catch (err) {
      if (err instanceof ConnectError && UNKNOWN_KEY.includes(err.code)) return refuse("That API key is not valid, or it was revoked.");
      deps.failures?.refund(request.ip);
      throw err;
    }
    deps.failures?.refund(request.ip);
    if (!auth.scopes.includes("api_user") && !auth.scopes.includes("api_read")) return refuse("This API key has no access to the console.");
    deps.sessions.startKey(reply, { workspaceId: auth.workspaceId, keyId: auth.keyId });
    reply.clearCookie(PRESESSION_COOKIE, cookieOptions(deps));
    return seeOther(reply, next);
  });

  scope.post("/sign-in/email", async (request, reply) => {
    if (!offersMagicLink(ctx)) throw refusal({ code: "not_found", status: 404, message: "Sign-in by email is not configured (MAILROOM_SYSTEM_FROM)." });
    const form = (request.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    const email = typeof form.email === "string" ? form.email.trim().toLowerCase() : "";
    if (!EMAIL_SHAPE.test(email)) {
      return html(reply.code(400)).send(signInPage(request, reply, ctx, next, { kind: "error", message: "Enter an email address." }));
    }
    for (const [limiter, key] of [[perClient, request.ip], [perEmail, email]] as const) {
      const taken = limiter.attempt(key);
      if (!taken.ok) {
        reply.header("retry-after", taken.retryAfterS);
        throw refusal({ code: "rate_limited", status: 429, message: `Too many sign-in links asked for; retry in ${taken.retryAfterS} s.` });
      }
    }
    const started = await deps.clients.team.startMagicLink({ email }, rpcOptions(request));
    if (started.token) {
      const url = `${deps.config.publicUrl}${CONSOLE_PREFIX}/magic/${started.token}`;
      // Not awaited: the answer takes as long for a member as for anyone else.
      void ctx.mail.signInLink(request, started.memberEmail || email, url, started.expiresAt ? timestampDate(started.expiresAt) : undefined);
    }
    return html(reply).send(plainPage({ title: "Check your email", body: render(checkEmailView(email, next)) }));
  });

  scope.get("/magic/:token", async (request, reply) => {
    const { token } = request.params as { token: string };
    return html(reply).send(plainPage({ title: "Sign in", body: render(magicLinkView(token, anonymousCsrfField(request, reply, deps))) }));
  });

  scope.post("/magic/:token", async (request, reply) => {
    const { token } = request.params as { token: string };
    deps.failures?.attempt(request.ip, reply);
    if (!TOKEN_SHAPE.test(token)) throw refusal({ code: "unauthorized", status: 401, message: LINK_MESSAGES.magic_link_invalid });
    let redeemed;
    try {
      redeemed = await deps.clients.team.redeemMagicLink({ token, userAgent: userAgent(request), ip: request.ip }, rpcOptions(request));
    } catch (err) {
      throw linkRefusal(err, "magic_link_invalid");
    }
    deps.failures?.refund(request.ip);
    deps.sessions.startMember(reply, redeemed.sessionToken);
    reply.clearCookie(PRESESSION_COOKIE, cookieOptions(deps));
    return seeOther(reply, CONSOLE_PREFIX);
  });

  scope.get("/oidc/start", async (request, reply) => {
    if (!ctx.oidc) throw refusal({ code: "not_found", status: 404, message: "OpenID Connect sign-in is not configured (MAILROOM_OIDC_ISSUER)." });
    const next = safeNext((request.query as Record<string, unknown>).next);
    return seeOther(reply, await ctx.oidc.start(reply, next));
  });

  scope.get("/oidc/callback", async (request, reply) => {
    if (!ctx.oidc) throw refusal({ code: "not_found", status: 404, message: "OpenID Connect sign-in is not configured (MAILROOM_OIDC_ISSUER)." });
    let who;
    try {
      who = await ctx.oidc.finish(request, reply);
    } catch (err) {
      if (err instanceof OidcSignInError) throw refusal({ code: "unauthorized", status: 401, message: err.message });
      throw err;
    }
    let signedIn;
    try {
      signedIn = await deps.clients.team.signInWithOidc({
        email: who.email, issuer: who.issuer, subject: who.subject, userAgent: userAgent(request), ip: request.ip,
      }, rpcOptions(request));
    } catch (err) {
      const code = errorInfoOf(err)?.code ?? "";
      if (code === "member_not_active" || code === "member_not_found" || (err instanceof ConnectError && [Code.PermissionDenied, Code.NotFound].includes(err.code) && !LINK_MESSAGES[code])) {
        throw refusal({ code: "forbidden", status: 403, message: `${who.email} is not a member of a workspace here. Ask an owner to invite you.` });
      }
      throw linkRefusal(err, "member_not_active");
    }
    deps.sessions.startMember(reply, signedIn.sessionToken);
    return seeOther(reply, who.next);
  });

  scope.post("/sign-out", { config: { consoleWithoutSession: true } }, async (request, reply) => {
    const session = request.consoleSession;
    let flash: Flash = { kind: "ok", message: "You are signed out." };
    if (session?.kind === "member" && session.sessionId) {
      try {
        await deps.clients.team.revokeSession({ workspaceId: session.workspaceId, sessionId: session.sessionId }, rpcOptions(request));
      } catch (err) {
        // The browser forgets the session anyway; say that the server could not end it.
        request.log.warn({ err, sessionId: session.sessionId }, "console session not revoked at sign-out");
        flash = { kind: "error", message: "You are signed out in this browser, but the session could not be revoked now; use “Sign out everywhere” after signing in again." };
      }
      deps.sessions.forget({ sessionId: session.sessionId });
    }
    deps.sessions.end(reply);
    setFlash(reply, flash);
    return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
  });
}
