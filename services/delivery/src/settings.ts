import { z } from "zod";

/**
 * Delivery-only settings, read from MAILROOM_* variables beside the shared kit config.
 * Every duration is in milliseconds.
 */
const bool = z
  .enum(["1", "0", "true", "false", "yes", "no"])
  .transform((v) => v === "1" || v === "true" || v === "yes");

const schema = z.object({
  /** Pooled SMTP connections per delivery process. */
  MAILROOM_SMTP_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(5),
  /** Messages sent over one connection before it is recycled. */
  MAILROOM_SMTP_MAX_MESSAGES: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Connection, greeting and socket timeout of one SMTP transaction. */
  MAILROOM_SMTP_TIMEOUT_MS: z.coerce.number().int().min(500).max(600_000).default(60_000),
  /** Refuse relays whose certificate does not verify (set 0 only for a local relay). */
  MAILROOM_SMTP_TLS_REJECT_UNAUTHORIZED: bool.default(true),
  /** Require STARTTLS on a plain smtp:// relay. */
  MAILROOM_SMTP_REQUIRE_TLS: bool.default(false),
  /** Never try STARTTLS (a local sink without TLS). */
  MAILROOM_SMTP_IGNORE_TLS: bool.default(false),
  /** Relay-wide messages per second shared by every delivery process; 0 = unlimited. */
  MAILROOM_SMTP_RATE: z.coerce.number().min(0).default(0),
  /** Jobs handled at once by one process. */
  MAILROOM_DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(64),
  /** SMTP attempts (4xx / connection failures) before a delivery is given up as failed. */
  MAILROOM_DELIVERY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
  /** First retry delay; doubles per attempt up to MAILROOM_DELIVERY_RETRY_MAX_MS. */
  MAILROOM_DELIVERY_RETRY_BASE_MS: z.coerce.number().int().min(1).default(5_000),
  MAILROOM_DELIVERY_RETRY_MAX_MS: z.coerce.number().int().min(1).default(15 * 60_000),
  /** How long a paused broadcast's job waits before it is looked at again. */
  MAILROOM_DELIVERY_PAUSE_RECHECK_MS: z.coerce.number().int().min(10).default(10_000),
  /**
   * JetStream ack wait; also how old a claim must be before another process may take it
   * over. Defaults to the SMTP timeout plus a margin, so a live send is never taken over.
   */
  MAILROOM_DELIVERY_ACK_WAIT_MS: z.coerce.number().int().min(200).optional(),
  /** JetStream max_deliver (pauses and rate waits also count; see requeue in consumer.ts). */
  MAILROOM_DELIVERY_MAX_DELIVER: z.coerce.number().int().min(2).max(100_000).default(200),
  /** Compiled contents kept in memory, in megabytes of text. */
  MAILROOM_DELIVERY_CONTENT_CACHE_MB: z.coerce.number().min(1).default(64),
  /** How long a sender check (and its DKIM key) is cached. */
  MAILROOM_DELIVERY_SENDER_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  /** Time given to in-flight sends on shutdown before they are nak'ed. */
  MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(15_000),
});

export interface DeliverySettings {
  poolSize: number;
  maxMessagesPerConnection: number;
  smtpTimeoutMs: number;
  tlsRejectUnauthorized: boolean;
  requireTls: boolean;
  ignoreTls: boolean;
  relayRate: number;
  concurrency: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  pauseRecheckMs: number;
  ackWaitMs: number;
  maxDeliver: number;
  contentCacheBytes: number;
  senderCacheMs: number;
  shutdownGraceMs: number;
}

export function loadDeliverySettings(env: NodeJS.ProcessEnv = process.env): DeliverySettings {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid delivery configuration:\n${lines.join("\n")}`);
  }
  const c = parsed.data;
  return {
    poolSize: c.MAILROOM_SMTP_POOL_SIZE,
    maxMessagesPerConnection: c.MAILROOM_SMTP_MAX_MESSAGES,
    smtpTimeoutMs: c.MAILROOM_SMTP_TIMEOUT_MS,
    tlsRejectUnauthorized: c.MAILROOM_SMTP_TLS_REJECT_UNAUTHORIZED,
    requireTls: c.MAILROOM_SMTP_REQUIRE_TLS,
    ignoreTls: c.MAILROOM_SMTP_IGNORE_TLS,
    relayRate: c.MAILROOM_SMTP_RATE,
    concurrency: c.MAILROOM_DELIVERY_CONCURRENCY,
    maxAttempts: c.MAILROOM_DELIVERY_MAX_ATTEMPTS,
    retryBaseMs: c.MAILROOM_DELIVERY_RETRY_BASE_MS,
    retryMaxMs: c.MAILROOM_DELIVERY_RETRY_MAX_MS,
    pauseRecheckMs: c.MAILROOM_DELIVERY_PAUSE_RECHECK_MS,
    // A whole transaction can take connect + greeting + socket timeouts; leave a margin.
    ackWaitMs: c.MAILROOM_DELIVERY_ACK_WAIT_MS ?? c.MAILROOM_SMTP_TIMEOUT_MS * 2 + 10_000,
    maxDeliver: c.MAILROOM_DELIVERY_MAX_DELIVER,
    contentCacheBytes: Math.round(c.MAILROOM_DELIVERY_CONTENT_CACHE_MB * 1024 * 1024),
    senderCacheMs: c.MAILROOM_DELIVERY_SENDER_CACHE_MS,
    shutdownGraceMs: c.MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS,
  };
}
