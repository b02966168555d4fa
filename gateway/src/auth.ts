import { hash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { callOptionsFor, type GatewayDeps } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import type { AuthFailureLimiter } from "./rate-limit.js";
import { isRole, lowerRole, requireRole, roleFromScopes, type Role } from "@mailroom/http/roles.js";

export interface AuthContext {
  workspaceId: string;
  keyId: string;
  scopes: string[];
  /** The key's effective role (roles.ts): the accounts unit's, capped by the key's owner; else from its scopes. */
  role?: Role;
  /** The member who owns the key, when it has one. */
  memberId?: string;
}

declare module "fastify" {
  interface FastifyRequest {
    auth?: AuthContext;
  }
  interface FastifyContextConfig {
    /**
     * Scope the route declared; default "api_user". Who may call a route is decided by its
     * rule in roles.ts; this is the fallback for a route without one (test apps only).
     */
    scope?: string;
  }
}

// The scheme is case-insensitive (RFC 9110 §11.1; DESIGN §6): `bearer`, `BEARER` too.
const BEARER = /^Bearer\s+([A-Za-z0-9_\-.~+/=]{8,256})\s*$/i;
/** Distinct keys remembered at once; the least recently used is forgotten first. */
const MAX_CACHED_KEYS = 10_000;
/** Accounts answers that mean "no such key" rather than "the accounts unit is in trouble". */
const UNKNOWN_KEY = [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument];

const unauthorized = (message: string) => refusal({ code: "unauthorized", message });

/**
 * Resolves `Authorization: Bearer <key>` through the accounts unit and caches successes
 * briefly (by key hash, never the key) so a burst of sends costs one lookup: concurrent
 * requests with a key not yet cached share one accounts call. Failures are not cached.
 * Refusals are thrown and answered by the gateway's error handler. With a `failures`
 * limiter, a key not yet verified costs its client address one attempt (given back when
 * the key is valid): an address out of attempts is refused before the accounts unit is asked.
 */
export function createAuthHook(deps: Pick<GatewayDeps, "clients" | "authCacheMs">, failures?: AuthFailureLimiter) {
  const cache = new LRUCache<string, AuthContext, { apiKey: string; requestId: string }>({
    max: MAX_CACHED_KEYS,
    // lru-cache reads a ttl of 0 as "forever"; 1 ms is the closest to "do not cache".
    ttl: Math.max(1, deps.authCacheMs),
    // Concurrent requests with one key share one lookup, which names the request that started it.
    fetchMethod: async (_keyHash, _stale, { context: { apiKey, requestId } }) => {
      try {
        const res = await deps.clients.accounts.authenticate({ apiKey }, callOptionsFor(requestId, 10_000));
        return authContextOf(res);
      } catch (err) {
        // A banned workspace's key is known and refused as such (403 workspace_banned), not a guess.
        if (errorInfoOf(err)?.code === "workspace_banned") throw refusal({ code: "workspace_banned", message: errorInfoOf(err)!.message });
        if (err instanceof ConnectError && UNKNOWN_KEY.includes(err.code)) throw unauthorized("Invalid API key");
        throw err;
      }
    },
  });

  /** Requests waiting on a lookup, by key hash. */
  const lookups = new Map<string, number>();

  return async function authenticate(request: FastifyRequest, reply?: FastifyReply) {
    const header = request.headers.authorization;
    if (!header) throw unauthorized("Missing API key. Send Authorization: Bearer <API_KEY>.");
    const match = BEARER.exec(header);
    if (!match) {
      failures?.attempt(request.ip, reply);
      throw unauthorized("Invalid API key");
    }
    // One-shot digest: no Hash object per request.
    const keyHash = hash("sha256", match[1]!, "hex");
    // A key answered valid before, even if that answer has since expired and is being asked
    // again, is no guess: when a busy client's cached key expires, its concurrent requests
    // must not each spend one of the address's failed-attempt tokens (they did: a burst of
    // 429s every authCacheMs).
    // Concurrent requests with one key share one lookup (the cache's fetch), so only the
    // one that starts it is charged: a busy client's first burst after a restart is not a
    // burst of failed attempts either.
    const charged = cache.peek(keyHash, { allowStale: true }) === undefined && !lookups.has(keyHash);
    if (charged) failures?.attempt(request.ip, reply);
    lookups.set(keyHash, (lookups.get(keyHash) ?? 0) + 1);
    let auth: AuthContext;
    try {
      auth = (await cache.fetch(keyHash, { context: { apiKey: match[1]!, requestId: String(request.id) } }))!;
    } catch (err) {
      // Only a refused key counts as a failed attempt, not an accounts outage.
      if (charged && errorInfoOf(err)?.code !== "unauthorized") failures?.refund(request.ip);
      throw err;
    } finally {
      const left = lookups.get(keyHash)! - 1;
      if (left) lookups.set(keyHash, left);
      else lookups.delete(keyHash);
    }
    if (charged) failures?.refund(request.ip);
    // The key is authenticated: set before the role check, so a refusal's hints name its
    // workspace (sendError fills in `<workspace-id>` from it).
    request.auth = auth;
    // Who may call the route: its rule in roles.ts, checked against the key's role.
    requireRole(request, { kind: "key", role: auth.role, workspaceId: auth.workspaceId }, request.routeOptions.config.scope);
  };
}

/**
 * The accounts unit's answer as the request's auth: its effective `role` when it sends one (keys
 * with an owner are capped by the owner's role), else the role the key's scopes stand for.
 * The scopes still bound it, so no key acts beyond what they allowed before roles: `api_read`
 * alone is at most VIEWER, no scope at all is no role.
 */
export function authContextOf(res: { workspaceId: string; keyId: string; scopes: string[]; role?: string; memberId?: string }): AuthContext {
  const fromScopes = roleFromScopes(res.scopes);
  const ceiling: Role | undefined = fromScopes === "EDITOR" ? "OWNER" : fromScopes;
  const role = !ceiling ? undefined : isRole(res.role) ? lowerRole(res.role, ceiling) : fromScopes;
  return {
    workspaceId: res.workspaceId,
    keyId: res.keyId,
    scopes: res.scopes,
    ...(role ? { role } : {}),
    ...(res.memberId ? { memberId: res.memberId } : {}),
  };
}

/** The authenticated workspace of a request that passed the auth hook. */
export function workspaceOf(request: FastifyRequest): string {
  if (!request.auth) throw new Error("route registered outside the authenticated scope");
  return request.auth.workspaceId;
}
