/**
 * What every console page module receives: the gateway's dependencies (service clients,
 * config, logger) plus the console's session store and the failed-key limiter.
 *
 *   export function registerXPages(scope: FastifyInstance, deps: ConsoleDeps): void
 */
import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import type { AuthFailureLimiter } from "../rate-limit.js";
import type { SessionStore } from "./session.js";
import type { ConsoleMail } from "./system-mail.js";

export interface ConsoleDeps extends GatewayDeps {
  sessions: SessionStore;
  /** The gateway's failed-API-key limiter (per client address), shared with /v1. */
  failures?: AuthFailureLimiter;
  /** The console's own mail: sign-in links and invitations (system-mail.ts). */
  mail: ConsoleMail;
}

export type ConsolePageModule = (scope: FastifyInstance, deps: ConsoleDeps) => void;
