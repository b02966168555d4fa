/**
 * Console sign-in sessions. API for page modules:
 *
 *   ConsoleSession          { kind, workspaceId, workspaceName, role, memberId?, memberEmail?, sessionId?,
 *                             keyId, keyName, scopes, actor, canEdit, csrfToken, expiresAt } (types.ts)
 *   sessionOf(request)      the request's session (routes behind requireSession; throws otherwise)
 *   requireSession          hook (onRequest or preHandler): no valid session → 303 to
 *                           /console/sign-in?next=<this page> (GET) or a 401 page (other methods).
 *                           index.ts already applies it to every page module but sign-in.
 *   setFlash(reply, flash)  a one-shot message for the next page (signed cookie), then
 *   seeOther(reply, url)    answer 303 (Post/Redirect/Get).
 *   takeFlash(request, reply)  reads and clears it (index.ts does this into request.consoleFlash).
 *
 * Two kinds of session, both in one AES-GCM sealed cookie (key derived from MAILROOM_SECRET,
 * purpose console-session) with a random nonce (the CSRF tokens' secret, csrf.ts) and an expiry:
 *
 * - member (magic link, OpenID Connect): the team's session token (the accounts unit's
 *   TeamService). Each request asks the team (GetSession, cached at most MEMBER_CACHE_MS), so a
 *   revoked session or a removed member is signed out within seconds; when the team rotates the
 *   token the cookie is resealed with the new one.
 * - key (API-key sign-in, bootstrap and development): workspace and key id (never the key).
 *   Each request checks the key (GetApiKey, cached for MAILROOM_AUTH_CACHE_MS); its role is the
 *   lower of the key's and its owner's, and a key whose owner is gone signs out.
 */
import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { callOptionsFor, type GatewayDeps } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { atLeast, consolePrincipal, isRole, lowerRole, mayCall, requireRole, type Role } from "@mailroom/http/roles.js";
import { SECRET_PURPOSES, SecretError, openSecret, sealSecret, secretKeysOf } from "@mailroom/kit/secrets.js";
import { withCsrfToken } from "./csrf.js";
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
/** A key session lasts at most this long; then the key is asked for again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** The cookie of a member session; the team's idle expiry and revocation end it sooner. */
export const MEMBER_COOKIE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** A member session's lookup is trusted this long at most (revocation shows within it). */
export const MEMBER_CACHE_MS = 2_000;

type SealedSession =
  | { v: 1; w: string; k: string; n: string; exp: number }
  | { v: 2; kind: "key"; w: string; k: string; n: string; exp: number }
  /** t: the team's session token (accounts unit). */
  | { v: 2; kind: "member"; t: string; n: string; exp: number };

interface KeyFacts {
  workspaceName: string;
  keyName: string;
  scopes: string[];
  role: Role;
}

interface MemberFacts {
  workspaceId: string;
  workspaceName: string;
  sessionId: string;
  memberId: string;
  memberEmail: string;
  role: Role;
  /** Set when the team rotated the token: the cookie gets it. */
  rotatedToken?: string;
}

/** Answers of the accounts unit that mean "this key or session is gone", not "the unit is in trouble". */
const GONE = [Code.NotFound, Code.PermissionDenied, Code.Unauthenticated, Code.InvalidArgument];
const isGone = (err: unknown) => err instanceof ConnectError && GONE.includes(err.code);

/** A role as the accounts unit spells it, or undefined for anything else. */
export const roleOf = (value: string | undefined): Role | undefined => (isRole(value) ? value : undefined);
const lower = lowerRole;
const scopesOf = (role: Role) => (role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"]);

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
  /** The session of the request's cookie, or undefined (no cookie, forged, expired, revoked). */
  load(request: FastifyRequest, reply: FastifyReply): Promise<ConsoleSession | undefined>;
  /** Signs in with a key the accounts unit just authenticated. */
  startKey(reply: FastifyReply, auth: { workspaceId: string; keyId: string }): void;
  /** Signs in a member: the session token the team just issued. */
  startMember(reply: FastifyReply, sessionToken: string): void;
  /** Clears the cookie (the caller revokes a member session first). */
  end(reply: FastifyReply): void;
  /** Drops cached lookups of a member's sessions, or of one session (after revoking them here). */
  forget(which: { memberId?: string; sessionId?: string }): void;
}

export function createSessionStore(deps: Pick<GatewayDeps, "config" | "clients" | "authCacheMs">, now: () => number = Date.now): SessionStore {
  const keys = secretKeysOf(deps.config);
  const seal = (body: SealedSession) => sealSecret(keys, SECRET_PURPOSES.consoleSession, JSON.stringify(body));
  const workspaceName = async (workspaceId: string, requestId: string) =>
    (await deps.clients.accounts.getWorkspace({ workspaceId }, callOptionsFor(requestId, 10_000))).workspace?.name ?? "";

  const lookupKey = async (workspaceId: string, keyId: string, requestId: string): Promise<KeyFacts | undefined> => {
    const opts = callOptionsFor(requestId, 10_000);
    try {
      const { apiKey } = await deps.clients.accounts.getApiKey({ workspaceId, keyId }, opts);
      if (!apiKey || apiKey.revokedAt || apiKey.workspaceId !== workspaceId) return undefined;
      let role: Role = roleOf(apiKey.role) ?? (apiKey.scopes.includes("api_user") ? "EDITOR" : "VIEWER");
      if (!apiKey.scopes.includes("api_user")) role = lower(role, "VIEWER");
      if (apiKey.ownerMemberId) {
        // A key never does more than its owner; a removed owner's key no longer signs in.
        const { members } = await deps.clients.team.listMembers({ workspaceId }, opts);
        const owner = members.find((m) => m.id === apiKey.ownerMemberId && m.status === "ACTIVE");
        const ownerRole = roleOf(owner?.role);
        if (!ownerRole) return undefined;
        role = lower(role, ownerRole);
      }
      return { workspaceName: await workspaceName(workspaceId, requestId), keyName: apiKey.name, scopes: apiKey.scopes, role };
    } catch (err) {
      if (isGone(err)) return undefined;
      throw err;
    }
  };

  const lookupMember = async (token: string, requestId: string): Promise<MemberFacts | undefined> => {
    try {
      const got = await deps.clients.team.getSession({ sessionToken: token }, callOptionsFor(requestId, 10_000));
      const role = roleOf(got.member?.role);
      if (!got.session || !got.member || !role || got.member.status !== "ACTIVE") return undefined;
      return {
        workspaceId: got.workspaceId,
        workspaceName: await workspaceName(got.workspaceId, requestId),
        sessionId: got.session.id,
        memberId: got.member.id,
        memberEmail: got.member.email,
        role,
        rotatedToken: got.rotatedToken || undefined,
      };
    } catch (err) {
      if (isGone(err)) return undefined;
      throw err;
    }
  };

  // Only live answers are cached; a revoked key or session is asked about again (and refused) every time.
  const keyCache = deps.authCacheMs > 0
    ? new LRUCache<string, KeyFacts, { workspaceId: string; keyId: string; requestId: string }>({
      max: 10_000,
      ttl: deps.authCacheMs,
      // Concurrent loads share one lookup, which names the request that started it.
      fetchMethod: async (_id, _stale, { context }) => lookupKey(context.workspaceId, context.keyId, context.requestId),
    })
    : undefined;
  const memberCacheMs = Math.min(deps.authCacheMs, MEMBER_CACHE_MS);
  const memberCache = memberCacheMs > 0
    ? new LRUCache<string, MemberFacts, { requestId: string }>({
      max: 10_000,
      ttl: memberCacheMs,
      fetchMethod: async (token, _stale, { context }) => lookupMember(token, context.requestId),
    })
    : undefined;
  const keyFacts = (workspaceId: string, keyId: string, requestId: string) =>
    keyCache ? keyCache.fetch(`${workspaceId}\0${keyId}`, { context: { workspaceId, keyId, requestId } }) : lookupKey(workspaceId, keyId, requestId);
  const memberFacts = (token: string, requestId: string) =>
    memberCache ? memberCache.fetch(token, { context: { requestId } }) : lookupMember(token, requestId);

  const open = (raw: string): SealedSession | undefined => {
    let sealed: SealedSession;
    try {
      sealed = JSON.parse(openSecret(keys, SECRET_PURPOSES.consoleSession, raw)) as SealedSession;
    } catch (err) {
      if (!(err instanceof SecretError || err instanceof SyntaxError)) throw err;
      return undefined;
    }
    if (!sealed || typeof sealed !== "object" || typeof sealed.n !== "string" || !(sealed.exp > now())) return undefined;
    if (sealed.v === 1 || (sealed.v === 2 && sealed.kind === "key")) return typeof sealed.w === "string" && typeof sealed.k === "string" ? sealed : undefined;
    if (sealed.v === 2 && sealed.kind === "member") return typeof sealed.t === "string" && sealed.t ? sealed : undefined;
    return undefined;
  };

  return {
    async load(request, reply) {
      const raw = request.cookies[SESSION_COOKIE];
      if (!raw) return undefined;
      const sealed = open(raw);
      const signOut = () => {
        reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
        return undefined;
      };
      if (!sealed) return signOut();
      const withToken = (session: Omit<ConsoleSession, "csrfToken">): ConsoleSession => withCsrfToken(deps.config.secret, sealed.n, session);
      if (sealed.v === 2 && sealed.kind === "member") {
        const m = await memberFacts(sealed.t, String(request.id));
        if (!m) return signOut();
        if (m.rotatedToken && m.rotatedToken !== sealed.t) {
          reply.setCookie(SESSION_COOKIE, seal({ ...sealed, t: m.rotatedToken }), cookieOptions(deps, Math.max(1, Math.floor((sealed.exp - now()) / 1000))));
        }
        return withToken({
          kind: "member",
          workspaceId: m.workspaceId,
          workspaceName: m.workspaceName,
          keyId: "",
          keyName: "",
          scopes: scopesOf(m.role),
          role: m.role,
          memberId: m.memberId,
          memberEmail: m.memberEmail,
          sessionId: m.sessionId,
          actor: `member:${m.memberId}`,
          canEdit: atLeast(m.role, "EDITOR"),
          expiresAt: new Date(sealed.exp),
        });
      }
      const key = await keyFacts(sealed.w, sealed.k, String(request.id));
      if (!key || !(key.scopes.includes("api_user") || key.scopes.includes("api_read"))) return signOut();
      return withToken({
        kind: "key",
        workspaceId: sealed.w,
        workspaceName: key.workspaceName,
        keyId: sealed.k,
        keyName: key.keyName,
        scopes: key.scopes,
        role: key.role,
        actor: `key:${sealed.k}`,
        canEdit: key.scopes.includes("api_user") && atLeast(key.role, "EDITOR"),
        expiresAt: new Date(sealed.exp),
      });
    },
    startKey(reply, auth) {
      const body: SealedSession = { v: 2, kind: "key", w: auth.workspaceId, k: auth.keyId, n: randomBytes(18).toString("base64url"), exp: now() + SESSION_TTL_MS };
      reply.setCookie(SESSION_COOKIE, seal(body), cookieOptions(deps, SESSION_TTL_MS / 1000));
    },
    startMember(reply, sessionToken) {
      const body: SealedSession = { v: 2, kind: "member", t: sessionToken, n: randomBytes(18).toString("base64url"), exp: now() + MEMBER_COOKIE_TTL_MS };
      reply.setCookie(SESSION_COOKIE, seal(body), cookieOptions(deps, MEMBER_COOKIE_TTL_MS / 1000));
    },
    end(reply) {
      reply.clearCookie(SESSION_COOKIE, cookieOptions(deps));
    },
    forget({ memberId, sessionId }) {
      if (!memberCache) return;
      for (const [token, facts] of memberCache.entries()) {
        if (facts.memberId === memberId || facts.sessionId === sessionId) memberCache.delete(token);
      }
    },
  };
}

/** The session of a request behind requireSession. */
export function sessionOf(request: FastifyRequest): ConsoleSession {
  if (!request.consoleSession) throw new Error("console route registered without requireSession");
  return request.consoleSession;
}

/**
 * Whether this session may post to a console route (its pattern as registered, e.g.
 * "/console/webhooks/:id/test"), by the route's rule in roles.ts: pages show a form or a
 * button only to those who may use it, so nothing shown leads to a 403 page.
 */
export function mayPost(session: ConsoleSession, route: string): boolean {
  return session.canEdit && mayCall(consolePrincipal(session), "POST", route);
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
