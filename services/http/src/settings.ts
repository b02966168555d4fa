import { z } from "zod";
import { configError, loadSettings, type Config } from "@mailroom/kit/config.js";

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
  /**
   * Console sign-in by OpenID Connect: the provider's issuer URL (https; http only on loopback),
   * the client registered there (redirect URI <public URL>/console/oidc/callback) and its secret.
   * All three or none.
   */
  MAILROOM_OIDC_ISSUER: z.string().url().optional(),
  MAILROOM_OIDC_CLIENT_ID: z.string().min(1).optional(),
  MAILROOM_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  /** The provider's name on the sign-in button ("Sign in with <name>"); default the issuer's host. */
  MAILROOM_OIDC_NAME: z.string().min(1).max(60).optional(),
  /**
   * The system sender of console mail (magic links, invitations): `addr` or `Name <addr>`, an
   * address MAILROOM_SYSTEM_WORKSPACE may send from, and that workspace. Both or neither.
   */
  MAILROOM_SYSTEM_FROM: z.string().min(3).optional(),
  MAILROOM_SYSTEM_WORKSPACE: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a workspace id").optional(),
});

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Shown on the sign-in button. */
  name: string;
  /** The issuer is http on loopback (tests, a local provider): openid-client must be told. */
  insecure: boolean;
}

/** Who sends the console's own mail (magic links, invitations). */
export interface SystemSender {
  workspaceId: string;
  from: string;
  fromName: string;
}

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
  /** Console sign-in by OpenID Connect; absent: not offered. */
  oidc?: OidcSettings;
  /** The console's mail sender; absent: sign-in links are not emailed (development prints them). */
  systemSender?: SystemSender;
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
    oidc: oidcSettings(c),
    systemSender: systemSender(c.MAILROOM_SYSTEM_FROM, c.MAILROOM_SYSTEM_WORKSPACE),
  };
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

function oidcSettings(c: z.output<typeof schema>): OidcSettings | undefined {
  const set = { MAILROOM_OIDC_ISSUER: c.MAILROOM_OIDC_ISSUER, MAILROOM_OIDC_CLIENT_ID: c.MAILROOM_OIDC_CLIENT_ID, MAILROOM_OIDC_CLIENT_SECRET: c.MAILROOM_OIDC_CLIENT_SECRET };
  const missing = Object.entries(set).filter(([, v]) => !v).map(([k]) => k);
  if (missing.length === 3) {
    if (c.MAILROOM_OIDC_NAME) throw configError([{ variable: "MAILROOM_OIDC_NAME", message: "needs MAILROOM_OIDC_ISSUER, MAILROOM_OIDC_CLIENT_ID and MAILROOM_OIDC_CLIENT_SECRET" }]);
    return undefined;
  }
  if (missing.length) {
    throw configError(missing.map((variable) => ({ variable, message: "OpenID Connect sign-in needs MAILROOM_OIDC_ISSUER, MAILROOM_OIDC_CLIENT_ID and MAILROOM_OIDC_CLIENT_SECRET together" })));
  }
  const issuer = new URL(c.MAILROOM_OIDC_ISSUER!);
  const insecure = issuer.protocol === "http:";
  if ((insecure && !LOOPBACK.has(issuer.hostname)) || !["http:", "https:"].includes(issuer.protocol)) {
    throw configError([{ variable: "MAILROOM_OIDC_ISSUER", message: "must be an https URL (http only on loopback)" }]);
  }
  return {
    issuer: c.MAILROOM_OIDC_ISSUER!,
    clientId: c.MAILROOM_OIDC_CLIENT_ID!,
    clientSecret: c.MAILROOM_OIDC_CLIENT_SECRET!,
    name: c.MAILROOM_OIDC_NAME ?? issuer.hostname,
    insecure,
  };
}

const ADDRESS = /^[^\s@<>",;]+@[^\s@<>",;]+\.[^\s@<>",;]+$/;

function systemSender(from: string | undefined, workspaceId: string | undefined): SystemSender | undefined {
  if (!from && !workspaceId) return undefined;
  if (!from || !workspaceId) {
    const variable = from ? "MAILROOM_SYSTEM_WORKSPACE" : "MAILROOM_SYSTEM_FROM";
    throw configError([{ variable, message: "the console's system sender needs MAILROOM_SYSTEM_FROM and MAILROOM_SYSTEM_WORKSPACE together" }]);
  }
  const named = /^\s*"?([^"<]*?)"?\s*<([^<>]+)>\s*$/.exec(from);
  const address = (named ? named[2] : from).trim();
  if (!ADDRESS.test(address)) throw configError([{ variable: "MAILROOM_SYSTEM_FROM", message: "must be an address or `Name <address>`" }]);
  return { workspaceId, from: address, fromName: named ? named[1].trim() : "" };
}

/** Delivery's default mode (services/delivery settings): capture unless told otherwise or given a relay or routes. */
function capturesMail(mode: string | undefined, smtpUrl: string | undefined, routes: string | undefined): boolean {
  if (mode) return mode === "capture";
  return !smtpUrl && !routes;
}
