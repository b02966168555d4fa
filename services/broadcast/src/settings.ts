import { z } from "zod";
import { loadSettings } from "@mailroom/kit/config.js";
import { parseAllowNetworks } from "@mailroom/kit/network-policy.js";

/**
 * The broadcast service's settings; what every process shares (NATS, store, secret, URLs) is
 * kit's `loadConfig`.
 */
const schema = z.object({
  /**
   * How often the email service's scheduler claims due emails; the sender loop here looks
   * for work at this interval, at most every 250 ms. (The email service declares it too.)
   */
  MAILROOM_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(10).default(500),
  /**
   * The shortest A/B test `waitFor` accepted, in seconds (300: five minutes). Tests lower it
   * to wait seconds instead of minutes; the longest stays 7 days.
   */
  MAILROOM_AB_MIN_WAIT_SECONDS: z.coerce.number().int().min(1).max(300).default(300),
  /**
   * How long a sender holds a broadcast it claimed for a step (extended page by page): when its
   * process dies, another broadcast process carries the broadcast on once this runs out.
   */
  MAILROOM_BROADCAST_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(60_000),
  /** A spamd (tcp://host:port) that scores pre-send checks; unset: `spamassassin` when on the PATH, else no score. */
  MAILROOM_SPAMD_URL: z.string().default(""),
  /** The non-public networks a pre-send check may fetch links in: the webhooks' setting (the same SSRF guard). */
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

export interface BroadcastSettings {
  /** How often the sender loop looks for due broadcasts and pages to release. */
  senderIntervalMs: number;
  /** Shortest A/B `waitFor` accepted, in seconds. */
  abMinWaitSeconds: number;
  /** The sender's lease on a claimed broadcast. */
  leaseMs: number;
  /** Pre-send checks: spamd's URL ("" : none) and the networks links may be fetched in. */
  spamdUrl: string;
  allowNetworks: string[];
}

/** Reads and validates the broadcast service's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadBroadcastSettings(env: NodeJS.ProcessEnv = process.env): BroadcastSettings {
  const c = loadSettings(schema, env);
  return { senderIntervalMs: Math.min(c.MAILROOM_SCHEDULER_INTERVAL_MS, 250), abMinWaitSeconds: c.MAILROOM_AB_MIN_WAIT_SECONDS, leaseMs: c.MAILROOM_BROADCAST_LEASE_MS, spamdUrl: c.MAILROOM_SPAMD_URL, allowNetworks: c.MAILROOM_WEBHOOK_ALLOW_NETWORKS };
}
