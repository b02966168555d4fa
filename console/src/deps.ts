/**
 * What every console page module receives: the gateway's dependencies (service clients,
 * config, logger) plus the console's session store and the failed-key limiter.
 *
 *   export function registerXPages(scope: FastifyInstance, deps: ConsoleDeps): void
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import type { SessionStore } from "./session.js";
import type { ConsoleMail } from "./system-mail.js";

/** The gateway's failed-API-key limiter, as the sign-in pages use it (the gateway passes its own in). */
export interface AuthFailureLimiter {
  /** Counts a failed attempt from this address; refuses (429) once the address has used its share. */
  attempt(address: string, reply: FastifyReply): void;
  /** Gives an attempt back (the key was right after all). */
  refund(address: string): void;
}

export interface ConsoleDeps extends GatewayDeps {
  sessions: SessionStore;
  /** The gateway's failed-API-key limiter (per client address), shared with /v1. */
  failures?: AuthFailureLimiter;
  /** The console's own mail: sign-in links and invitations (system-mail.ts). */
  mail: ConsoleMail;
}

export type ConsolePageModule = (scope: FastifyInstance, deps: ConsoleDeps) => void;
