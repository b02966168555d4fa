/**
 * Sign-in with a workspace API key, and sign-out. A key the directory refuses is a 401
 * page; each refused key costs the client address one attempt of the gateway's failed-key
 * limiter (a 429 page when none are left), as on /v1.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { anonymousCsrfField, PRESESSION_COOKIE } from "./csrf.js";
import { CONSOLE_PREFIX, escapeHtml, plainPage, type Flash } from "./layout.js";
import { cookieOptions, safeNext, seeOther, setFlash } from "./session.js";
import { rpcOptions } from "../deps.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** A console POST that may come without a session and then needs no CSRF token (sign-out). */
    consoleWithoutSession?: boolean;
  }
}

const KEY_SHAPE = /^[A-Za-z0-9_\-.~+/=]{8,256}$/;
/** Directory answers that mean "no such key". */
const UNKNOWN_KEY = [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument];

function signInPage(request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps, next: string, flash?: Flash): string {
  const body = `<h1>Sign in to the console</h1>
<p class="muted">Use an API key of your workspace. The console only sees that workspace; a read-only (VIEWER) key can look but not change anything.</p>
<form method="post" action="${CONSOLE_PREFIX}/sign-in" class="card">
${anonymousCsrfField(request, reply, deps)}
<input type="hidden" name="next" value="${escapeHtml(next)}">
<div class="field"><label for="apiKey">API key</label>
<input id="apiKey" name="apiKey" type="password" required autocomplete="current-password" spellcheck="false" autocapitalize="off" style="width:100%" aria-describedby="apiKeyHelp">
<p id="apiKeyHelp" class="muted">It starts with <code>mr_</code>. It is checked once and never stored in your browser.</p></div>
<button type="submit">Sign in</button>
</form>`;
  return plainPage({ title: "Sign in", body, flash });
}

export function registerSignInPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/sign-in", async (request, reply) => {
    const next = safeNext((request.query as Record<string, unknown>).next);
    if (request.consoleSession) return seeOther(reply, next);
    return reply.type("text/html; charset=utf-8").send(signInPage(request, reply, deps, next, request.consoleFlash));
  });

  scope.post("/sign-in", async (request, reply) => {
    const form = (request.body ?? {}) as Record<string, unknown>;
    const next = safeNext(form.next);
    const apiKey = typeof form.apiKey === "string" ? form.apiKey.trim() : "";
    const refuse = (message: string) =>
      reply.code(401).type("text/html; charset=utf-8").send(signInPage(request, reply, deps, next, { kind: "error", message }));
    if (!apiKey) return reply.code(400).type("text/html; charset=utf-8").send(signInPage(request, reply, deps, next, { kind: "error", message: "Enter an API key." }));
    // Throws a 429 page when this address has no attempts left.
    deps.failures?.attempt(request.ip, reply);
    if (!KEY_SHAPE.test(apiKey)) return refuse("That API key is not valid.");
    let auth;
    try {
      auth = await deps.clients.directory.authenticate({ apiKey }, rpcOptions(request));
    } catch (err) {
      if (err instanceof ConnectError && UNKNOWN_KEY.includes(err.code)) return refuse("That API key is not valid, or it was revoked.");
      deps.failures?.refund(request.ip);
      throw err;
    }
    deps.failures?.refund(request.ip);
    if (!auth.scopes.includes("api_user") && !auth.scopes.includes("api_read")) return refuse("This API key has no access to the console.");
    deps.sessions.start(reply, { workspaceId: auth.workspaceId, keyId: auth.keyId });
    reply.clearCookie(PRESESSION_COOKIE, cookieOptions(deps));
    return seeOther(reply, next);
  });

  scope.post("/sign-out", { config: { consoleWithoutSession: true } }, async (request, reply) => {
    deps.sessions.end(reply);
    setFlash(reply, { kind: "ok", message: "You are signed out." });
    return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
  });
}
