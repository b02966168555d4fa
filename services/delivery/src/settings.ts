import { z } from "zod";
import { envBool, envHostName, loadSettings } from "@mailroom/kit/config.js";

/**
 * The delivery unit's settings, read from MAILROOM_SMTP_* and MAILROOM_DELIVERY_* (and the
 * bounce domain), every duration in milliseconds; what every process shares (NATS, store,
 * secret, URLs) is kit's `loadConfig`. Each variable below is listed with its default and range.
 */
const schema = z.object({
  /** Pooled SMTP connections per delivery process. */
  MAILROOM_SMTP_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(5),
  /** Messages sent over one connection before it is recycled. */
  MAILROOM_SMTP_MAX_MESSAGES: z.coerce.number().int().min(1).max(100_000).default(100),
  /** Connection, greeting and socket timeout of one SMTP transaction. */
  MAILROOM_SMTP_TIMEOUT_MS: z.coerce.number().int().min(500).max(600_000).default(60_000),
  /** Refuse relays whose certificate does not verify (set 0 only for a local relay). */
  MAILROOM_SMTP_TLS_REJECT_UNAUTHORIZED: envBool.default(true),
  /** Require STARTTLS on a plain smtp:// relay. */
  MAILROOM_SMTP_REQUIRE_TLS: envBool.default(false),
  /** Never try STARTTLS (a local sink without TLS). */
  MAILROOM_SMTP_IGNORE_TLS: envBool.default(false),
  /** Relay-wide messages per second shared by every delivery process; 0 = unlimited. */
  MAILROOM_SMTP_RATE: z.coerce.number().min(0).default(0),
  /** Transactional-lane jobs (transactional mail, test sends) handled at once by one process. */
  MAILROOM_DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(64),
  /** Transactional lane: jobs handed out and not yet acked, across every process. */
  MAILROOM_DELIVERY_MAX_ACK_PENDING: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Broadcast-lane jobs handled at once by one process: page jobs (each sends
   * MAILROOM_DELIVERY_PAGE_CONCURRENCY recipients at once) and recipients retried alone.
   * 16 pages already queue more sends than the SMTP pool has connections; more only hold
   * recipients in memory (64 pages of 500 held ~400 MB).
   */
  MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(16),
  /**
   * Broadcast lane: jobs handed out and not yet acked, across every process. A paused
   * broadcast's jobs wait (nak'ed with the pause recheck delay) inside this bound.
   */
  MAILROOM_DELIVERY_BROADCAST_MAX_ACK_PENDING: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  /**
   * Broadcast MIME skeletons (built once per content and sender) kept in memory; each
   * holds up to one encoded HTML and text body.
   */
  MAILROOM_DELIVERY_SKELETON_CACHE: z.coerce.number().int().min(0).max(100_000).default(64),
  /** SMTP attempts (4xx / connection failures) before a delivery is given up as failed. */
  MAILROOM_DELIVERY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
  /** First retry delay; doubles per attempt up to MAILROOM_DELIVERY_RETRY_MAX_MS. */
  MAILROOM_DELIVERY_RETRY_BASE_MS: z.coerce.number().int().min(1).default(5_000),
  MAILROOM_DELIVERY_RETRY_MAX_MS: z.coerce.number().int().min(1).default(15 * 60_000),
  /** How long a paused broadcast's job waits before it is looked at again. */
  MAILROOM_DELIVERY_PAUSE_RECHECK_MS: z.coerce.number().int().min(10).default(10_000),
  /**
   * JetStream ack wait; also how old a claim must be before another process may take it
   * over. A job being worked on sends in-progress heartbeats every third of it, so a live
   * send is never redelivered, and a killed process's jobs come back within it.
   */
  MAILROOM_DELIVERY_ACK_WAIT_MS: z.coerce.number().int().min(200).default(30_000),
  /** Recipients of one broadcast page handled at once; default twice MAILROOM_SMTP_POOL_SIZE. */
  MAILROOM_DELIVERY_PAGE_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).optional(),
  /** JetStream max_deliver (pauses and rate waits also count; see requeue in consumer.ts). */
  MAILROOM_DELIVERY_MAX_DELIVER: z.coerce.number().int().min(2).max(100_000).default(200),
  /** Broadcast contents (compiled, with their prepared merge) kept in memory, in estimated megabytes. */
  MAILROOM_DELIVERY_CONTENT_CACHE_MB: z.coerce.number().min(1).default(64),
  /** ...and at most this many of them. */
  MAILROOM_DELIVERY_CONTENT_CACHE_ENTRIES: z.coerce.number().int().min(1).max(100_000).default(256),
  /** Attachments kept encoded (base64 MIME parts, reused by retries and recipients), in megabytes. */
  MAILROOM_DELIVERY_ATTACHMENT_CACHE_MB: z.coerce.number().min(1).default(64),
  /** How long a sender check (and its DKIM key) is cached. */
  MAILROOM_DELIVERY_SENDER_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  /** Time given to in-flight sends on shutdown before they are nak'ed. */
  MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(15_000),
  /** The relay, `smtp://user:pass@host:port` (`smtps://` for implicit TLS); unset: mail is captured under the data dir. */
  MAILROOM_SMTP_URL: z.string().optional().transform((v) => v || undefined),
  /**
   * Domain of the VERP return paths (`bounces+<token>@domain`) and of the mailto unsubscribe
   * address; its MX points at the inbound unit. Unset: each sender's own `bounces.<domain>`.
   * (Also read by the inbound unit and the directory, which declare it too.)
   */
  MAILROOM_BOUNCE_DOMAIN: envHostName,
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
  maxAckPending: number;
  broadcastConcurrency: number;
  broadcastMaxAckPending: number;
  /** Skeletons kept; 0 = build every broadcast message from scratch. */
  skeletonCacheEntries: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  pauseRecheckMs: number;
  ackWaitMs: number;
  /** Recipients of one page job handled at once. */
  pageConcurrency: number;
  maxDeliver: number;
  contentCacheBytes: number;
  contentCacheEntries: number;
  attachmentCacheBytes: number;
  senderCacheMs: number;
  shutdownGraceMs: number;
  /** The relay URL; undefined: capture locally. */
  smtpUrl?: string;
  bounceDomain?: string;
}

/** Reads and validates delivery's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadDeliverySettings(env: NodeJS.ProcessEnv = process.env): DeliverySettings {
  return deliverySettingsOf(loadSettings(schema, env));
}

function deliverySettingsOf(c: z.output<typeof schema>): DeliverySettings {
  return {
    smtpUrl: c.MAILROOM_SMTP_URL,
    bounceDomain: c.MAILROOM_BOUNCE_DOMAIN,
    poolSize: c.MAILROOM_SMTP_POOL_SIZE,
    maxMessagesPerConnection: c.MAILROOM_SMTP_MAX_MESSAGES,
    smtpTimeoutMs: c.MAILROOM_SMTP_TIMEOUT_MS,
    tlsRejectUnauthorized: c.MAILROOM_SMTP_TLS_REJECT_UNAUTHORIZED,
    requireTls: c.MAILROOM_SMTP_REQUIRE_TLS,
    ignoreTls: c.MAILROOM_SMTP_IGNORE_TLS,
    relayRate: c.MAILROOM_SMTP_RATE,
    concurrency: c.MAILROOM_DELIVERY_CONCURRENCY,
    maxAckPending: c.MAILROOM_DELIVERY_MAX_ACK_PENDING,
    broadcastConcurrency: c.MAILROOM_DELIVERY_BROADCAST_CONCURRENCY,
    broadcastMaxAckPending: c.MAILROOM_DELIVERY_BROADCAST_MAX_ACK_PENDING,
    skeletonCacheEntries: c.MAILROOM_DELIVERY_SKELETON_CACHE,
    maxAttempts: c.MAILROOM_DELIVERY_MAX_ATTEMPTS,
    retryBaseMs: c.MAILROOM_DELIVERY_RETRY_BASE_MS,
    retryMaxMs: c.MAILROOM_DELIVERY_RETRY_MAX_MS,
    pauseRecheckMs: c.MAILROOM_DELIVERY_PAUSE_RECHECK_MS,
    // Heartbeats keep a long SMTP transaction's job; the ack wait only bounds recovery.
    ackWaitMs: c.MAILROOM_DELIVERY_ACK_WAIT_MS,
    pageConcurrency: c.MAILROOM_DELIVERY_PAGE_CONCURRENCY ?? c.MAILROOM_SMTP_POOL_SIZE * 2,
    maxDeliver: c.MAILROOM_DELIVERY_MAX_DELIVER,
    contentCacheBytes: Math.round(c.MAILROOM_DELIVERY_CONTENT_CACHE_MB * 1024 * 1024),
    contentCacheEntries: c.MAILROOM_DELIVERY_CONTENT_CACHE_ENTRIES,
    attachmentCacheBytes: Math.round(c.MAILROOM_DELIVERY_ATTACHMENT_CACHE_MB * 1024 * 1024),
    senderCacheMs: c.MAILROOM_DELIVERY_SENDER_CACHE_MS,
    shutdownGraceMs: c.MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS,
  };
}
