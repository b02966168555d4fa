/**
 * Console sign-in sessions. API for page modules:
 *
 *   ConsoleSession          { workspaceId, workspaceName, keyId, keyName, scopes, canEdit, csrfToken, expiresAt }
 *   sessionOf(request)      the request's session (routes behind requireSession; throws otherwise)
 *   requireSession          hook (onRequest or preHandler): no valid session → 303 to
 *                           /console/sign-in?next=<this page> (GET) or a 401 page (other methods).
 *                           index.ts already applies it to every page module but sign-in.
 *   setFlash(reply, flash)  a one-shot message for the next page (signed cookie), then
 *   seeOther(reply, url)    answer 303 (Post/Redirect/Get).
 *   takeFlash(request, reply)  reads and clears it (index.ts does this into request.consoleFlash).
 *
 * The cookie is stateless, so any number of gateways serve it: AES-GCM sealed (key derived
 * from MAILROOM_SECRET, purpose console-session) JSON of workspace id, API key id, a random
 * nonce (the CSRF secret) and expiry. The API key itself is never in it. Each request checks
 * the key against the directory (GetApiKey, cached for MAILROOM_AUTH_CACHE_MS), so revoking
 * the key, or removing it, signs the console out within that time.
 */
import { randomBytes, createHmac } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { callOptionsFor, type GatewayDeps } from "../deps.js";
import { refusal } from "../errors.js";
import { consolePrincipal, requireRole } from "../roles.js";
import { SECRET_PURPOSES, SecretError, deriveKey, openSecret, sealSecret, secretKeysOf } from "@mailroom/kit/secrets.js";
import { CONSOLE_PREFIX, type ConsoleSession, type Flash } from "./types.js";

export type { ConsoleSession };

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the console's session hook when the cookie holds a valid session. */
    consoleSession?: ConsoleSession;
    /** The flash message left by the previous request, if any. */
    consoleFlash?: Flash;
  }
}

export const SESSION_COOKIE = "mr_console";
export const FLASH_COOKIE = "mr_console_flash";
/** A session lasts at most this long; then the key is asked for again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

interface SealedSession {
  v: 1;
  w: string;
  k: string;
  /** Random; the CSRF token is an HMAC of it. */
  n: string;
  exp: number;
}

interface KeyFacts {
  workspaceName: string;
  keyName: string;
  scopes: string[];
}

/** Directory answers that mean "this key is gone", not "the directory is in trouble". */
const GONE = [Code.NotFound, Code.PermissionDenied, Code.Unauthenticated, Code.InvalidArgument];

export const csrfTokenOf = (secret: string, nonce: string) =>
  createHmac("sha256", deriveKey(secret, SECRET_PURPOSES.consoleCsrf)).update(`session:${nonce}`).digest("base64url");

/** Cookie attributes: host-only, console path, never readable by scripts, not sent cross-site. */
export function cookieOptions(deps: Pick<GatewayDeps, "config">, maxAgeSeconds?: number) {
  return {
    path: CONSOLE_PREFIX,
    httpOnly: true,
    sameSite: "lax" as const,
    secure: deps.config.publicUrl.startsWith("https:"),
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

export interface SessionStore {
  /** The session of the request's cookie, or undefined (no cookie, forged, expired, key revoked). */
  load(request: FastifyRequest, reply: FastifyReply): Promise<ConsoleSession | undefined>;
  /** Signs in: sets the cookie for a key the directory just authenticated. */
  start(reply: FastifyReply, auth: { workspaceId: string; keyId: string }): void;
  end(reply: FastifyReply): void;
}

export function createSessionStore(deps: Pick<GatewayDeps, "config" | "clients" | "authCacheMs">, now: () => number = Date.now): SessionStore {
  const keys = secretKeysOf(deps.config);
  const lookup = async (workspaceId: string, keyId: string, requestId: string): Promise<KeyFacts | undefined> => {
    const opts = callOptionsFor(requestId, 10_000);
    try {
      const { apiKey } = await deps.clients.directory.getApiKey({ workspaceId, keyId }, opts);
      if (!apiKey || apiKey.revokedAt || apiKey.workspaceId !== workspaceId) return undefined;
      const { workspace } = await deps.clients.directory.getWorkspace({ workspaceId }, opts);
      return { workspaceName: workspace?.name ?? "", keyName: apiKey.name, scopes: apiKey.scopes };
    } catch (err) {
      if (err instanceof ConnectError && GONE.includes(err.code)) return undefined;
      throw err;
    }
  };
  // Only live keys are cached; a revoked one is asked about again (and refused) every time.
  const facts = deps.authCacheMs > 0
    ? new LRUCache<string, KeyFacts, { workspaceId: string; keyId: string; requestId: string }>({
      max: 10_000,
      ttl: deps.authCacheMs,
      // Concurrent loads share one lookup, which names the request that started it.
      fetchMethod: async (_id, _stale, { context }) => lookup(context.workspaceId, context.keyId, context.requestId),
    })
    : undefined;
  const factsOf = (workspaceId: string, keyId: string, requestId: string) =>
    facts ? facts.fetch(`${workspaceId}\0${keyId}`, { context: { workspaceId, keyId, requestId } }) : lookup(workspaceId, keyId, requestId);

  return {
    async load(request, reply) {
      const raw = request.cookies[SESSION_COOKIE];
      if (!raw) return undefined;
      let sealed: SealedSession;
      try {
        sealed = JSON.parse(openSecret(keys, SECRET_PURPOSES.consoleSession, raw)) as SealedSession;
      } catch (err) {
        if (!(err instanceof SecretError || err instanceof SyntaxError)) throw err;
        reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
        return undefined;
      }
      if (sealed.v !== 1 || typeof sealed.w !== "string" || typeof sealed.k !== "string" || !(sealed.exp > now())) {
        reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
        return undefined;
      }
      const key = await factsOf(sealed.w, sealed.k, String(request.id));
      if (!key || !(key.scopes.includes("api_user") || key.scopes.includes("api_read"))) {
        reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
        return undefined;
      }
      return {
        workspaceId: sealed.w,
        workspaceName: key.workspaceName,
        keyId: sealed.k,
        keyName: key.keyName,
        scopes: key.scopes,
        canEdit: key.scopes.includes("api_user"),
        csrfToken: csrfTokenOf(deps.config.secret, sealed.n),
        expiresAt: new Date(sealed.exp),
      };
    },
    start(reply, auth) {
      const body: SealedSession = { v: 1, w: auth.workspaceId, k: auth.keyId, n: randomBytes(18).toString("base64url"), exp: now() + SESSION_TTL_MS };
      reply.setCookie(SESSION_COOKIE, sealSecret(keys, SECRET_PURPOSES.consoleSession, JSON.stringify(body)), cookieOptions(deps, SESSION_TTL_MS / 1000));
    },
    end(reply) {
      reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
    },
  };
}

/** The session of a request behind requireSession. */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw new Error("console route registered without requireSession");
  return request.consoleSession;
}

/** Only a console path may be a `next` target: never another site. */
export function safeNext(next: unknown): string {
  return typeof next === "string" && /^\/console(?:[/?#]|$)/.test(next) && !next.includes("\\") && !/[\r\n]/.test(next) ? next : CONSOLE_PREFIX;
}

export async function requireSession(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  // Who may open the page: its rule in roles.ts (the one place), by the session's role.
  if (request.consoleSession) return requireRole(request, consolePrincipal(request.consoleSession));
  if (request.method === "GET" || request.method === "HEAD") {
    await reply.redirect(`${CONSOLE_PREFIX}/sign-in?next=${encodeURIComponent(safeNext(request.url))}`, 303);
    return;
  }
  throw refusal({ code: "unauthorized", message: "Your console session has ended; sign in again." });
}

/** A one-shot message for the next page (signed, so nobody else can put words on it). */
export function setFlash(reply: FastifyReply, flash: Flash): FastifyReply {
  return reply.setCookie(FLASH_COOKIE, JSON.stringify(flash), { path: CONSOLE_PREFIX, httpOnly: true, sameSite: "lax", secure: "auto", maxAge: 60, signed: true });
}

export function takeFlash(request: FastifyRequest, reply: FastifyReply): Flash | undefined {
  const raw = request.cookies[FLASH_COOKIE];
  if (!raw) return undefined;
  reply.clearCookie(FLASH_COOKIE, { path: CONSOLE_PREFIX });
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || !unsigned.value) return undefined;
  try {
    const f = JSON.parse(unsigned.value) as Flash;
    return (f.kind === "ok" || f.kind === "error") && typeof f.message === "string" ? { kind: f.kind, message: f.message } : undefined;
  } catch {
    return undefined;
  }
}

/** 303 See Other: after a POST the browser GETs the next page. */
export function seeOther(reply: FastifyReply, url: string): FastifyReply {
  return reply.redirect(url, 303);
}
