import { z } from "zod";
import { loadSettings, type Config } from "@mailroom/kit/config.js";

/**
 * The gateway's settings: the address it binds, rate limits, the API key cache and the error
 * pages; what every process shares (NATS, secret, public URL, the gateway's port
 * MAILROOM_HTTP_PORT that the public URL defaults from) is kit's `loadConfig`.
 */
const schema = z.object({
  /** Address the gateway binds (0.0.0.0 in a container); /dev/mail is served only on loopback. */
  MAILROOM_HTTP_HOST: z.string().default("127.0.0.1"),
  /** Requests per minute per API key. */
  MAILROOM_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  /** Requests a key may send at once above its steady rate (token bucket size); default = a minute's worth. */
  MAILROOM_RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  /** Failed API key attempts per client address per minute before it gets 429 without a lookup. */
  MAILROOM_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(20),
  /** Base URL of the error documentation pages (default `<public URL>/docs/errors`). */
  MAILROOM_DOCS_URL: z.string().url().optional(),
  /** How long a verified API key is cached. */
  MAILROOM_AUTH_CACHE_MS: z.coerce.number().int().min(0).default(10_000),
  /**
   * Delivery's relay, mode and routes; read here only to know whether mail is captured
   * locally, which mounts the /dev/mail inbox. (Delivery declares and validates them.)
   */
  MAILROOM_SMTP_URL: z.string().optional(),
  MAILROOM_DELIVERY_MODE: z.string().optional(),
  MAILROOM_DELIVERY_ROUTES: z.string().optional(),
});

export interface GatewaySettings {
  httpHost: string;
  rateLimitPerMinute: number;
  /** Token bucket size of the per-key rate limit. */
  rateLimitBurst: number;
  authFailuresPerMinute: number;
  /** Base URL of the error documentation pages; `docsUrl` is `<errorDocsUrl>/<code>`. */
  errorDocsUrl: string;
  authCacheMs: number;
  /** Delivery keeps mail under the data dir instead of sending it (no relay, routes or direct mode). */
  capturesMail: boolean;
}

/** The error pages' base when MAILROOM_DOCS_URL is unset. */
export function defaultErrorDocsUrl(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/docs/errors`;
}

/**
 * Reads and validates the gateway's settings (the docs URL defaults from the shared public
 * URL); a bad value throws kit's ConfigError naming the variable.
 */
export function loadGatewaySettings(config: Pick<Config, "publicUrl">, env: NodeJS.ProcessEnv = process.env): GatewaySettings {
  const c = loadSettings(schema, env);
  return {
    httpHost: c.MAILROOM_HTTP_HOST,
    rateLimitPerMinute: c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    rateLimitBurst: c.MAILROOM_RATE_LIMIT_BURST ?? c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: c.MAILROOM_AUTH_FAILURES_PER_MINUTE,
    errorDocsUrl: c.MAILROOM_DOCS_URL ? c.MAILROOM_DOCS_URL.replace(/\/+$/, "") : defaultErrorDocsUrl(config.publicUrl),
    authCacheMs: c.MAILROOM_AUTH_CACHE_MS,
    capturesMail: capturesMail(c.MAILROOM_DELIVERY_MODE, c.MAILROOM_SMTP_URL, c.MAILROOM_DELIVERY_ROUTES),
  };
}

/** Delivery's default mode (services/delivery settings): capture unless told otherwise or given a relay or routes. */
function capturesMail(mode: string | undefined, smtpUrl: string | undefined, routes: string | undefined): boolean {
  if (mode) return mode === "capture";
  return !smtpUrl && !routes;
}
