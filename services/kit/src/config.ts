import { z } from "zod";
import path from "node:path";

/**
 * One validated config object for every process, read from MAILROOM_* variables. This is
 * the only module that reads the environment for Mailroom's own settings. Service URLs
 * default to the ports the local launcher uses.
 */
const bool = z
  .enum(["1", "0", "true", "false", "yes", "no"])
  .transform((v) => v === "1" || v === "true" || v === "yes");

/** Delivery settings (every duration in milliseconds). */
const deliverySchema = {
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
  /** Transactional-lane jobs (transactional mail, test sends) handled at once by one process. */
  MAILROOM_DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(64),
  /** Transactional lane: jobs handed out and not yet acked, across every process. */
  MAILROOM_DELIVERY_MAX_ACK_PENDING: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /** Broadcast-lane jobs handled at once by one process. */
  MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(64),
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
  /** How long a sender check (and its DKIM key) is cached. */
  MAILROOM_DELIVERY_SENDER_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  /** Time given to in-flight sends on shutdown before they are nak'ed. */
  MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(15_000),
};

/** The default MAILROOM_SECRET: fine on a laptop, refused with NODE_ENV=production. */
export const DEVELOPMENT_SECRET = "mailroom-development-secret-change-me";

/** Webhooks settings (every duration in milliseconds). */
const webhooksSchema = {
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
};

const schema = z.object({
  MAILROOM_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  MAILROOM_HTTP_HOST: z.string().default("127.0.0.1"),
  MAILROOM_PUBLIC_URL: z.string().url().optional(),
  MAILROOM_DATA_DIR: z.string().default(path.resolve(".mailroom")),
  /** One NATS server, or a cluster's members comma-separated (the client fails over between them). */
  MAILROOM_NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  /** Replicas of every stream and KV bucket (3 on a 3-node cluster; 1 on a single server). */
  MAILROOM_NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** When set, GET /metrics (gateway and every service) requires `Authorization: Bearer <token>`. */
  MAILROOM_METRICS_TOKEN: z.string().optional(),
  MAILROOM_MONGODB_URL: z.string().optional(),
  MAILROOM_SMTP_URL: z.string().optional(),
  MAILROOM_BOOTSTRAP: z.string().optional(),
  MAILROOM_SECRET: z.string().min(16).default(DEVELOPMENT_SECRET),
  /** The secret before the last rotation: still opens sealed values and verifies old tokens. */
  MAILROOM_SECRET_PREVIOUS: z.union([z.literal(""), z.string().min(16)]).optional(),
  NODE_ENV: z.string().optional(),
  MAILROOM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MAILROOM_DIRECTORY_URL: z.string().url().default("http://127.0.0.1:7101"),
  MAILROOM_EMAIL_URL: z.string().url().default("http://127.0.0.1:7102"),
  MAILROOM_BROADCAST_URL: z.string().url().default("http://127.0.0.1:7103"),
  MAILROOM_RENDERER_URL: z.string().url().default("http://127.0.0.1:7104"),
  MAILROOM_DELIVERY_URL: z.string().url().default("http://127.0.0.1:7105"),
  MAILROOM_WEBHOOKS_URL: z.string().url().default("http://127.0.0.1:7107"),
  /** Port the current service's Connect server listens on (the launcher sets it). */
  MAILROOM_SERVICE_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Address every service's Connect server binds (0.0.0.0 in containers). */
  MAILROOM_SERVICE_HOST: z.string().min(1).default("127.0.0.1"),
  /** Set by the launcher and test harness: a unit exits when its parent is gone. */
  MAILROOM_EXIT_WITH_PARENT: bool.default(false),
  /** Gateway: requests per minute per API key. */
  MAILROOM_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  /** Gateway: requests a key may send at once above its steady rate (token bucket size); default = a minute's worth. */
  MAILROOM_RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  /** Gateway: failed API key attempts per client address per minute before it gets 429 without a lookup. */
  MAILROOM_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(20),
  /** Gateway: base URL of the error documentation pages (default `<public URL>/docs/errors`). */
  MAILROOM_DOCS_URL: z.string().url().optional(),
  /** Gateway: how long a verified API key is cached. */
  MAILROOM_AUTH_CACHE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Email: hours an email's content is kept after it was delivered, failed or cancelled (0: dropped at once), for the console's preview. */
  MAILROOM_EMAIL_CONTENT_RETENTION_HOURS: z.coerce.number().int().min(0).max(24 * 366).default(72),
  /** Email: worker processes serving the email service's port (one per core the send path may use). */
  MAILROOM_EMAIL_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  /** Email: how often the scheduler claims due scheduled emails. */
  MAILROOM_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(10).default(500),
  /** Directory: resolvers for domain checks, `host[:port]` comma-separated (system resolvers when unset). */
  MAILROOM_DNS_SERVERS: z.string().optional(),
  /** Directory: the SPF include domains are told to publish. */
  MAILROOM_SPF_INCLUDE: z.string().optional(),
  /**
   * Domain of the VERP return paths (`bounces+<token>@domain`) and of the mailto unsubscribe
   * address; its MX points at the inbound unit. Unset: each sender's own domain.
   */
  MAILROOM_BOUNCE_DOMAIN: z.string().optional(),
  /**
   * Inbound: the public host name where the inbound unit's SMTP port is reachable on port 25,
   * the target of the bounce domain's MX record (the directory shows it with a domain's records).
   */
  MAILROOM_INBOUND_MX_HOST: z.string().optional(),
  /** Inbound: the SMTP port bounces, complaints and mailto unsubscribes arrive on. */
  MAILROOM_INBOUND_PORT: z.coerce.number().int().min(0).max(65535).default(2525),
  /** Inbound: the largest message accepted, in bytes (a DSN quoting a big message still fits). */
  MAILROOM_INBOUND_MAX_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  /** Inbound: how long a sent delivery is remembered, so a late bounce still finds it. */
  MAILROOM_INBOUND_REMEMBER_DAYS: z.coerce.number().min(1).default(30),
  ...deliverySchema,
  ...webhooksSchema,
});

export type RawConfig = z.infer<typeof schema>;

export interface Config {
  httpPort: number;
  httpHost: string;
  publicUrl: string;
  dataDir: string;
  natsUrl: string;
  natsReplicas: number;
  metricsToken?: string;
  mongodbUrl?: string;
  smtpUrl?: string;
  bootstrapFile?: string;
  secret: string;
  /** MAILROOM_SECRET_PREVIOUS (rotation): accepted for opening, never used for sealing. */
  previousSecret?: string;
  /** NODE_ENV=production. */
  production: boolean;
  logLevel: RawConfig["MAILROOM_LOG_LEVEL"];
  servicePort?: number;
  serviceHost: string;
  exitWithParent: boolean;
  rateLimitPerMinute: number;
  /** Token bucket size of the per-key rate limit. */
  rateLimitBurst: number;
  authFailuresPerMinute: number;
  /** Base URL of the error documentation pages; `docsUrl` is `<errorDocsUrl>/<code>`. */
  errorDocsUrl: string;
  authCacheMs: number;
  schedulerIntervalMs: number;
  /** Hours an email's content outlives its final status (0: dropped at once). */
  emailContentRetentionHours: number;
  /** Worker processes of the email service (node:cluster; 1 runs it in the one process). */
  emailWorkers: number;
  dnsServers?: string;
  spfInclude?: string;
  bounceDomain?: string;
  inbound: InboundSettings;
  delivery: DeliverySettings;
  webhooks: WebhooksSettings;
  urls: {
    directory: string;
    email: string;
    broadcast: string;
    renderer: string;
    delivery: string;
    webhooks: string;
  };
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
  }
  const c = parsed.data;
  const production = c.NODE_ENV === "production";
  if (production && (c.MAILROOM_SECRET === DEVELOPMENT_SECRET || c.MAILROOM_SECRET_PREVIOUS === DEVELOPMENT_SECRET)) {
    throw new ConfigError(
      "invalid configuration:\n  MAILROOM_SECRET: NODE_ENV=production needs your own secret, not the development default " +
        "(anyone could forge tracking links and open stored DKIM keys with it). Generate one with `openssl rand -base64 32`.",
    );
  }

  const publicUrl = (c.MAILROOM_PUBLIC_URL ?? `http://localhost:${c.MAILROOM_HTTP_PORT}`).replace(/\/+$/, "");
  return {
    httpPort: c.MAILROOM_HTTP_PORT,
    httpHost: c.MAILROOM_HTTP_HOST,
    publicUrl,
    dataDir: path.resolve(c.MAILROOM_DATA_DIR),
    natsUrl: c.MAILROOM_NATS_URL,
    natsReplicas: c.MAILROOM_NATS_REPLICAS,
    metricsToken: c.MAILROOM_METRICS_TOKEN || undefined,
    mongodbUrl: c.MAILROOM_MONGODB_URL || undefined,
    smtpUrl: c.MAILROOM_SMTP_URL || undefined,
    bootstrapFile: c.MAILROOM_BOOTSTRAP || undefined,
    secret: c.MAILROOM_SECRET,
    previousSecret: c.MAILROOM_SECRET_PREVIOUS || undefined,
    production,
    logLevel: c.MAILROOM_LOG_LEVEL,
    servicePort: c.MAILROOM_SERVICE_PORT,
    serviceHost: c.MAILROOM_SERVICE_HOST,
    exitWithParent: c.MAILROOM_EXIT_WITH_PARENT,
    rateLimitPerMinute: c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    rateLimitBurst: c.MAILROOM_RATE_LIMIT_BURST ?? c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: c.MAILROOM_AUTH_FAILURES_PER_MINUTE,
    errorDocsUrl: (c.MAILROOM_DOCS_URL ?? `${publicUrl}/docs/errors`).replace(/\/+$/, ""),
    authCacheMs: c.MAILROOM_AUTH_CACHE_MS,
    schedulerIntervalMs: c.MAILROOM_SCHEDULER_INTERVAL_MS,
    emailContentRetentionHours: c.MAILROOM_EMAIL_CONTENT_RETENTION_HOURS,
    emailWorkers: c.MAILROOM_EMAIL_WORKERS,
    dnsServers: c.MAILROOM_DNS_SERVERS || undefined,
    spfInclude: c.MAILROOM_SPF_INCLUDE || undefined,
    bounceDomain: c.MAILROOM_BOUNCE_DOMAIN?.trim().toLowerCase() || undefined,
    inbound: {
      port: c.MAILROOM_INBOUND_PORT,
      mxHost: c.MAILROOM_INBOUND_MX_HOST?.trim().toLowerCase() || undefined,
      maxMessageBytes: c.MAILROOM_INBOUND_MAX_BYTES,
      rememberMs: Math.round(c.MAILROOM_INBOUND_REMEMBER_DAYS * 24 * 3600 * 1000),
    },
    delivery: deliverySettingsOf(c),
    webhooks: {
      timeoutMs: c.MAILROOM_WEBHOOKS_TIMEOUT_MS,
      retryBaseMs: c.MAILROOM_WEBHOOKS_RETRY_BASE_MS,
      maxPerEndpoint: c.MAILROOM_WEBHOOKS_MAX_PER_ENDPOINT,
      concurrency: c.MAILROOM_WEBHOOKS_CONCURRENCY,
      pauseAfterMs: c.MAILROOM_WEBHOOKS_PAUSE_AFTER_MS,
      pauseMinFailures: c.MAILROOM_WEBHOOKS_PAUSE_MIN_FAILURES,
      pollMs: c.MAILROOM_WEBHOOKS_POLL_MS,
      endpointCacheMs: c.MAILROOM_WEBHOOKS_ENDPOINT_CACHE_MS,
    },
    urls: {
      directory: c.MAILROOM_DIRECTORY_URL,
      email: c.MAILROOM_EMAIL_URL,
      broadcast: c.MAILROOM_BROADCAST_URL,
      renderer: c.MAILROOM_RENDERER_URL,
      delivery: c.MAILROOM_DELIVERY_URL,
      webhooks: c.MAILROOM_WEBHOOKS_URL,
    },
  };
}

export interface InboundSettings {
  port: number;
  mxHost?: string;
  maxMessageBytes: number;
  rememberMs: number;
}

export interface WebhooksSettings {
  timeoutMs: number;
  retryBaseMs: number;
  maxPerEndpoint: number;
  concurrency: number;
  pauseAfterMs: number;
  pauseMinFailures: number;
  pollMs: number;
  endpointCacheMs: number;
}

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
  senderCacheMs: number;
  shutdownGraceMs: number;
}

function deliverySettingsOf(c: RawConfig): DeliverySettings {
  return {
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
    senderCacheMs: c.MAILROOM_DELIVERY_SENDER_CACHE_MS,
    shutdownGraceMs: c.MAILROOM_DELIVERY_SHUTDOWN_GRACE_MS,
  };
}

/** Default Connect port of each service, used when MAILROOM_SERVICE_PORT is unset. */
export function defaultServicePort(config: Config, service: keyof Config["urls"]): number {
  return Number(new URL(config.urls[service]).port);
}
