import { z } from "zod";
import { loadSettings } from "@mailroom/kit/config.js";
import { INLINE_CONTENT_BYTES } from "@mailroom/pipeline/content-store.js";

/**
 * The email service's settings; what every process shares (NATS, store, secret, URLs) is
 * kit's `loadConfig`.
 */
const schema = z.object({
  /** Hours an email's content is kept after it was delivered, failed or cancelled (0: dropped at once), for the console's preview. */
  MAILROOM_EMAIL_CONTENT_RETENTION_HOURS: z.coerce.number().int().min(0).max(24 * 366).default(72),
  /** Worker processes serving the email service's port (one per core the send path may use). */
  MAILROOM_EMAIL_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  /** How often the scheduler claims due scheduled emails (the broadcast unit reads it too, and declares it). */
  MAILROOM_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(10).default(500),
  /**
   * How long an email claimed for publishing (at send, or by the scheduler) stays this process's:
   * when the process dies first, another email process takes it over once this runs out.
   */
  MAILROOM_EMAIL_CLAIM_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /**
   * An email whose stored content is at most this many bytes carries it in its delivery job
   * (no content store write at acceptance, no read at delivery); 0 stores every email's.
   */
  MAILROOM_EMAIL_INLINE_CONTENT_BYTES: z.coerce.number().int().min(0).max(256 * 1024).default(INLINE_CONTENT_BYTES),
});

export interface EmailSettings {
  /** Hours an email's content outlives its final status (0: dropped at once). */
  contentRetentionHours: number;
  /** Worker processes of the email service (node:cluster; 1 runs it in the one process). */
  workers: number;
  schedulerIntervalMs: number;
  /** Publish claims' lease: how soon another process takes over a dead one's claimed emails. */
  claimLeaseMs: number;
  /** Largest content a job carries itself (0: none). */
  inlineContentBytes: number;
}

/** Reads and validates the email service's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadEmailSettings(env: NodeJS.ProcessEnv = process.env): EmailSettings {
  const c = loadSettings(schema, env);
  return {
    contentRetentionHours: c.MAILROOM_EMAIL_CONTENT_RETENTION_HOURS,
    workers: c.MAILROOM_EMAIL_WORKERS,
    schedulerIntervalMs: c.MAILROOM_SCHEDULER_INTERVAL_MS,
    claimLeaseMs: c.MAILROOM_EMAIL_CLAIM_LEASE_MS,
    inlineContentBytes: c.MAILROOM_EMAIL_INLINE_CONTENT_BYTES,
  };
}
