import { createHash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "./deps.js";
import { publicErrorBody, replyWithError, sendError } from "./errors.js";

export interface AuthContext {
  workspaceId: string;
  keyId: string;
  scopes: string[];
}

declare module "fastify" {
  interface FastifyRequest {
    auth?: AuthContext;
  }
  interface FastifyContextConfig {
    /** Scope the route requires; default "api_user". */
    scope?: string;
  }
}

const BEARER = /^Bearer\s+([A-Za-z0-9_\-.~+/=]{8,256})\s*$/;

/**
 * Resolves `Authorization: Bearer <key>` through the directory and caches successes
 * briefly (by key hash, never the key) so a burst of sends costs one lookup.
 */
export function createAuthHook(deps: Pick<GatewayDeps, "clients" | "authCacheMs">) {
  const cache = new Map<string, { auth: AuthContext; expires: number }>();
  const unauthorized = (reply: FastifyReply, message: string) =>
    sendError(reply, publicErrorBody({ code: "unauthorized", message }));

  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers.authorization;
    if (!header) return unauthorized(reply, "Missing API key. Send Authorization: Bearer <API_KEY>.");
    const match = BEARER.exec(header);
    if (!match) return unauthorized(reply, "Invalid API key");
    const keyHash = createHash("sha256").update(match[1]).digest("hex");
    const now = Date.now();
    let auth = cache.get(keyHash);
    if (!auth || auth.expires < now) {
      try {
        const res = await deps.clients.directory.authenticate({ apiKey: match[1] }, { timeoutMs: 10_000 });
        auth = { auth: { workspaceId: res.workspaceId, keyId: res.keyId, scopes: res.scopes }, expires: now + deps.authCacheMs };
        if (cache.size > 10_000) cache.clear();
        cache.set(keyHash, auth);
      } catch (err) {
        cache.delete(keyHash);
        if (err instanceof ConnectError && [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument].includes(err.code)) {
          return unauthorized(reply, "Invalid API key");
        }
        return replyWithError(reply, err);
      }
    }
    const required = request.routeOptions.config.scope ?? "api_user";
    if (!auth.auth.scopes.includes(required)) {
      return unauthorized(reply, `Insufficient scope: this endpoint requires the ${required} scope`);
    }
    request.auth = auth.auth;
  };
}

/** The authenticated workspace of a request that passed the auth hook. */
export function workspaceOf(request: FastifyRequest): string {
  if (!request.auth) throw new Error("route registered outside the authenticated scope");
  return request.auth.workspaceId;
}
