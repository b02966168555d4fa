import { z } from "zod";
import { configError, envBool, envHostName, loadSettings } from "@mailroom/kit/config.js";
import { RELAY_PROVIDERS, type RelayProvider } from "@mailroom/pipeline/relay-providers.js";
import type { Lane } from "./domain/ports.js";
import { directVariablesSet, loadDirectSettings, type DirectSettings } from "./adapters/direct/index.js";

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
   * (Also read by the inbound unit and the accounts unit, which declare it too.)
   */
  MAILROOM_BOUNCE_DOMAIN: envHostName,
  /**
   * `relay` (MAILROOM_SMTP_URL or MAILROOM_DELIVERY_ROUTES), `direct` (straight to the
   * recipients' MX hosts) or `capture` (kept under the data dir). Default: `relay` when a
   * relay or routes are configured (`direct` when every route is direct), else `capture`.
   */
  MAILROOM_DELIVERY_MODE: z.enum(["relay", "direct", "capture"]).optional().or(z.literal("").transform(() => undefined)),
  /** Named routes (JSON array, see routeSchema below); unset: one route from the mode. */
  MAILROOM_DELIVERY_ROUTES: z.string().optional().transform((v) => v?.trim() || undefined),
  /** How long a failing route is left out at first; doubles while it stays bad. */
  MAILROOM_DELIVERY_ROUTE_DOWN_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** ...up to this. */
  MAILROOM_DELIVERY_ROUTE_DOWN_MAX_MS: z.coerce.number().int().min(100).max(86_400_000).default(15 * 60_000),
  /** Consecutive deferrals (4xx about recipients, no success between) that mark a route down. */
  MAILROOM_DELIVERY_ROUTE_DOWN_AFTER: z.coerce.number().int().min(1).max(100_000).default(10),
});

export type DeliveryMode = "relay" | "direct" | "capture";
export type RouteKind = "relay" | "direct" | "capture";

/** One route of MAILROOM_DELIVERY_ROUTES as written by the operator. */
const routeSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9-]{1,32}$/, "must be 1-32 lowercase letters, digits or '-'"),
    url: z
      .string()
      .refine((u) => /^smtps?:\/\/[^/]+/.test(u) && URL.canParse(u), "must be smtp://[user:pass@]host[:port] or smtps://…")
      .optional(),
    direct: z.literal(true).optional(),
    weight: z.number().int().min(0).max(1_000).default(1),
    lanes: z.array(z.enum(["transactional", "broadcast"])).default([]),
    workspaces: z.array(z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "must be a workspace id")).min(1).optional(),
    provider: z.enum(RELAY_PROVIDERS).optional(),
    /** Messages per second over this route, shared by every delivery process (0 = unlimited). */
    rate: z.number().min(0).optional(),
    /** Connections this process keeps to the relay (default MAILROOM_SMTP_POOL_SIZE). */
    poolSize: z.number().int().min(1).max(100).optional(),
  })
  .strict()
  .refine((r) => (r.url === undefined) !== (r.direct === undefined), "needs either url or \"direct\": true (not both)")
  .refine((r) => !(r.direct && r.poolSize !== undefined), "poolSize is for relays (direct delivery limits connections per destination domain)")
  // A provider's correlation headers would go to recipients' servers, which never report to it.
  .refine((r) => !(r.direct && r.provider !== undefined), "provider is for relays (mail sent direct to MX goes through no provider)");

export interface RouteSettings {
  name: string;
  kind: RouteKind;
  /** The relay URL (kind relay only); holds credentials: log only its redactUrl. */
  url?: string;
  /** 0: failover only (used when every weighted candidate is down). */
  weight: number;
  /** Empty: both lanes. */
  lanes: Lane[];
  /** Empty: shared by every workspace that no route names. */
  workspaces: string[];
  provider?: RelayProvider;
  /** Messages per second across processes; 0 or absent: unlimited. */
  rate?: number;
  poolSize?: number;
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
  attachmentCacheBytes: number;
  senderCacheMs: number;
  shutdownGraceMs: number;
  /** The relay URL; undefined: capture locally. */
  smtpUrl?: string;
  bounceDomain?: string;
  mode: DeliveryMode;
  /** The routes mail goes through (at least one; built from the mode when MAILROOM_DELIVERY_ROUTES is unset). */
  routes: RouteSettings[];
  routeDownMs: number;
  routeDownMaxMs: number;
  routeDownAfter: number;
  /** Direct delivery's settings (MAILROOM_DELIVERY_EHLO_NAME …), read when a route is direct. */
  direct?: DirectSettings;
  /** Direct delivery's variables set although no route is direct (they do nothing: warned at start). */
  unusedDirectVariables: string[];
}

/** Reads and validates delivery's settings; a bad value throws kit's ConfigError naming the variable. */
export function loadDeliverySettings(env: NodeJS.ProcessEnv = process.env): DeliverySettings {
  const settings = deliverySettingsOf(loadSettings(schema, env));
  if (settings.routes.some((r) => r.kind === "direct")) settings.direct = loadDirectSettings(env);
  else settings.unusedDirectVariables = directVariablesSet(env);
  return settings;
}

function deliverySettingsOf(c: z.output<typeof schema>): DeliverySettings {
  const { mode, routes } = routesOf(c);
  return {
    mode,
    routes,
    unusedDirectVariables: [],
    routeDownMs: c.MAILROOM_DELIVERY_ROUTE_DOWN_MS,
    routeDownMaxMs: Math.max(c.MAILROOM_DELIVERY_ROUTE_DOWN_MAX_MS, c.MAILROOM_DELIVERY_ROUTE_DOWN_MS),
    routeDownAfter: c.MAILROOM_DELIVERY_ROUTE_DOWN_AFTER,
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

const LANES: readonly Lane[] = ["transactional", "broadcast"];

const refuse = (variable: string, message: string) => configError([{ variable, message }]);

/** The mode and its routes; every combination that would leave a setting without effect is refused. */
function routesOf(c: z.output<typeof schema>): { mode: DeliveryMode; routes: RouteSettings[] } {
  const smtpUrl = c.MAILROOM_SMTP_URL;
  if (c.MAILROOM_DELIVERY_ROUTES) {
    const routes = parseRoutes(c.MAILROOM_DELIVERY_ROUTES);
    if (smtpUrl) {
      throw refuse("MAILROOM_SMTP_URL", 'set either MAILROOM_SMTP_URL (one relay) or MAILROOM_DELIVERY_ROUTES, not both: write the relay as a route ({"name":"default","url":"…"})');
    }
    if (c.MAILROOM_SMTP_RATE > 0) {
      throw refuse("MAILROOM_SMTP_RATE", 'with MAILROOM_DELIVERY_ROUTES, give each route its own "rate"');
    }
    const allDirect = routes.every((r) => r.kind === "direct");
    const mode = c.MAILROOM_DELIVERY_MODE ?? (allDirect ? "direct" : "relay");
    if (mode === "capture") throw refuse("MAILROOM_DELIVERY_MODE", "capture sends nothing: unset MAILROOM_DELIVERY_ROUTES or choose relay or direct");
    if (mode === "direct" && !routes.some((r) => r.kind === "direct")) {
      throw refuse("MAILROOM_DELIVERY_MODE", 'direct, but no route of MAILROOM_DELIVERY_ROUTES is direct ("direct": true)');
    }
    if (mode === "relay" && !routes.some((r) => r.kind === "relay")) {
      throw refuse("MAILROOM_DELIVERY_MODE", 'relay, but no route of MAILROOM_DELIVERY_ROUTES is a relay (has a "url"): choose direct or add a relay route');
    }
    return { mode, routes };
  }
  const mode = c.MAILROOM_DELIVERY_MODE ?? (smtpUrl ? "relay" : "capture");
  const route = { weight: 1, lanes: [], workspaces: [] };
  switch (mode) {
    case "relay":
      if (!smtpUrl) throw refuse("MAILROOM_DELIVERY_MODE", "relay needs MAILROOM_SMTP_URL or MAILROOM_DELIVERY_ROUTES");
      return { mode, routes: [{ ...route, name: "default", kind: "relay", url: smtpUrl }] };
    case "direct":
      if (smtpUrl) throw refuse("MAILROOM_SMTP_URL", "set, but MAILROOM_DELIVERY_MODE is direct: unset one of them (or list both as MAILROOM_DELIVERY_ROUTES)");
      return { mode, routes: [{ ...route, name: "direct", kind: "direct" }] };
    case "capture":
      if (smtpUrl) throw refuse("MAILROOM_SMTP_URL", "set, but MAILROOM_DELIVERY_MODE is capture: unset one of them");
      return { mode, routes: [{ ...route, name: "capture", kind: "capture" }] };
  }
}

/** MAILROOM_DELIVERY_ROUTES: JSON, each route checked, names unique, every lane of every workspace served. */
export function parseRoutes(text: string): RouteSettings[] {
  const VAR = "MAILROOM_DELIVERY_ROUTES";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw refuse(VAR, `not JSON: ${(err as Error).message}`);
  }
  const parsed = z.array(routeSchema).min(1, "must list at least one route").safeParse(json);
  if (!parsed.success) {
    throw configError(parsed.error.issues.map((i) => ({ variable: VAR, message: `${pathOf(i.path)}${i.message}` })));
  }
  const routes: RouteSettings[] = parsed.data.map((r) => ({
    name: r.name,
    kind: r.direct ? "direct" : "relay",
    ...(r.url ? { url: r.url } : {}),
    weight: r.weight,
    lanes: [...new Set(r.lanes)],
    workspaces: [...new Set(r.workspaces ?? [])],
    ...(r.provider ? { provider: r.provider } : {}),
    ...(r.rate ? { rate: r.rate } : {}),
    ...(r.poolSize ? { poolSize: r.poolSize } : {}),
  }));
  const seen = new Set<string>();
  for (const r of routes) {
    if (seen.has(r.name)) throw refuse(VAR, `route name "${r.name}" is used twice`);
    seen.add(r.name);
  }
  // Mail of a lane with no route could never go out: refuse the gap instead.
  const serves = (r: RouteSettings, lane: Lane) => r.lanes.length === 0 || r.lanes.includes(lane);
  const shared = routes.filter((r) => r.workspaces.length === 0);
  for (const lane of LANES) {
    if (!shared.some((r) => serves(r, lane))) throw refuse(VAR, `no route without "workspaces" carries ${lane} mail`);
  }
  for (const ws of new Set(routes.flatMap((r) => r.workspaces))) {
    const own = routes.filter((r) => r.workspaces.includes(ws));
    for (const lane of LANES) {
      if (!own.some((r) => serves(r, lane))) {
        throw refuse(VAR, `workspace ${ws} has routes of its own (it uses only those) but none carries ${lane} mail`);
      }
    }
  }
  return routes;
}

function pathOf(path: PropertyKey[]): string {
  if (path.length === 0) return "";
  return `${path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${String(p)}`)).join("")}: `;
}
