import { z } from "zod";
import { loadSettings } from "@mailroom/kit/config.js";
import { parseAllowNetworks } from "./adapters/network-policy.js";

/**
 * The webhooks unit's settings, read from MAILROOM_WEBHOOKS_* (every duration in
 * milliseconds) and MAILROOM_WEBHOOK_ALLOW_NETWORKS; what every process shares (NATS, store, secret, URLs) is kit's `loadConfig`.
 */
const schema = z.object({
  /** One HTTP attempt's timeout. */
  MAILROOM_WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** Unit of the retry schedule: 5 s gives 5 s, 30 s, 2 min … 8 h (about 29 h in all). */
  MAILROOM_WEBHOOKS_RETRY_BASE_MS: z.coerce.number().int().min(1).default(5_000),
  /** Requests in flight to one endpoint from one process (a slow endpoint only blocks itself). */
  MAILROOM_WEBHOOKS_MAX_PER_ENDPOINT: z.coerce.number().int().min(1).max(100).default(4),
  /** Requests in flight from one process across all endpoints. */
  MAILROOM_WEBHOOKS_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(64),
  /** An endpoint whose every attempt failed for this long (and at least MIN_FAILURES times) is paused. */
  MAILROOM_WEBHOOKS_PAUSE_AFTER_MS: z.coerce.number().int().min(0).default(24 * 3600_000),
  MAILROOM_WEBHOOKS_PAUSE_MIN_FAILURES: z.coerce.number().int().min(1).default(10),
  /** How often the outbox looks for due deliveries (new events wake it at once in-process). */
  MAILROOM_WEBHOOKS_POLL_MS: z.coerce.number().int().min(10).default(500),
  /** How long a workspace's endpoint list is cached (changes made by this process invalidate it at once). */
  MAILROOM_WEBHOOKS_ENDPOINT_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
  /**
   * Networks webhooks may target although they are not public (comma-separated CIDRs the
   * operator trusts, e.g. its own app's private network). Unset: only public addresses.
   * `npm start` sets 127.0.0.0/8,::1/128 unless the operator set it.
   */
  MAILROOM_WEBHOOK_ALLOW_NETWORKS: z
    .string()
    .default("")
    .transform((value, ctx) => {
      try {
        return parseAllowNetworks(value);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
        return z.NEVER;
      }
    }),
});

export interface WebhooksSettings {
  timeoutMs: number;
  retryBaseMs: number;
  maxPerEndpoint: number;
  concurrency: number;
  pauseAfterMs: number;
  pauseMinFailures: number;
  pollMs: number;
  endpointCacheMs: number;
  /** MAILROOM_WEBHOOK_ALLOW_NETWORKS: the non-public networks webhooks may target. */
  allowNetworks: string[];
}

/** Reads and validates the webhooks settings; a bad value throws kit's ConfigError naming the variable. */
export function loadWebhooksSettings(env: NodeJS.ProcessEnv = process.env): WebhooksSettings {
  const c = loadSettings(schema, env);
  return {
    timeoutMs: c.MAILROOM_WEBHOOKS_TIMEOUT_MS,
    retryBaseMs: c.MAILROOM_WEBHOOKS_RETRY_BASE_MS,
    maxPerEndpoint: c.MAILROOM_WEBHOOKS_MAX_PER_ENDPOINT,
    concurrency: c.MAILROOM_WEBHOOKS_CONCURRENCY,
    pauseAfterMs: c.MAILROOM_WEBHOOKS_PAUSE_AFTER_MS,
    pauseMinFailures: c.MAILROOM_WEBHOOKS_PAUSE_MIN_FAILURES,
    pollMs: c.MAILROOM_WEBHOOKS_POLL_MS,
    endpointCacheMs: c.MAILROOM_WEBHOOKS_ENDPOINT_CACHE_MS,
    allowNetworks: c.MAILROOM_WEBHOOK_ALLOW_NETWORKS,
  };
}
