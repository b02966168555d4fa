import { z } from "zod";
import path from "node:path";

/**
 * What every process shares, read from MAILROOM_* variables: NATS, store, secret, log level,
 * public and service URLs. Kit holds no unit's settings: each unit declares its own in its
 * `src/settings.ts` (a zod schema of its MAILROOM_* variables, defaults and ranges) and reads
 * them with `loadSettings`, which validates them and fails as `loadConfig` does. Service URLs
 * default to the ports the local launcher uses.
 */

/** A boolean variable: 1/0, true/false, yes/no. For units' settings schemas too. */
export const envBool = z
  .enum(["1", "0", "true", "false", "yes", "no"])
  .transform((v) => v === "1" || v === "true" || v === "yes");

/** An optional host or domain name, trimmed and lowercased; empty reads as unset. */
export const envHostName = z
  .string()
  .optional()
  .transform((v) => v?.trim().toLowerCase() || undefined);

export class ConfigError extends Error {}

/** The one error style of every configuration mistake: `invalid configuration:` and a line per variable. */
export function configError(lines: { variable: string; message: string }[]): ConfigError {
  return new ConfigError(`invalid configuration:\n${lines.map((l) => `  ${l.variable}: ${l.message}`).join("\n")}`);
}

/**
 * Validates the environment against a schema a unit declares (its `src/settings.ts`) and
 * returns the parsed value; a bad or out-of-range value throws a ConfigError naming each
 * variable, as `loadConfig` does. Variables the schema does not name are ignored.
 */
export function loadSettings<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw configError(parsed.error.issues.map((i) => ({ variable: i.path.join("."), message: i.message })));
  }
  return parsed.data;
}

/** The default MAILROOM_SECRET: fine on a laptop, refused with NODE_ENV=production. */
export const DEVELOPMENT_SECRET = "mailroom-development-secret-change-me";

const schema = z.object({
  /**
   * The gateway's port. Shared: the public URL defaults to `http://localhost:<port>`, and the
   * launcher prints the gateway's address from it.
   */
  MAILROOM_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Base of tracking, unsubscribe and console links (email, broadcast, delivery, gateway). */
  MAILROOM_PUBLIC_URL: z.string().url().optional(),
  MAILROOM_DATA_DIR: z.string().default(path.resolve(".mailroom")),
  /** One NATS server, or a cluster's members comma-separated (the client fails over between them). */
  MAILROOM_NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  /** Replicas of every stream and KV bucket (3 on a 3-node cluster; 1 on a single server). */
  MAILROOM_NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** When set, GET /metrics (gateway and every service) requires `Authorization: Bearer <token>`. */
  MAILROOM_METRICS_TOKEN: z.string().optional(),
  MAILROOM_MONGODB_URL: z.string().optional(),
  /** The PostgreSQL store (DESIGN §10.1): a libpq URL. Not together with MAILROOM_MONGODB_URL. */
  MAILROOM_POSTGRES_URL: z.string().optional(),
  /** Connections per process in the PostgreSQL pool (default 10). */
  MAILROOM_POSTGRES_POOL: z.coerce.number().int().min(1).max(1000).optional(),
  MAILROOM_SECRET: z.string().min(16).default(DEVELOPMENT_SECRET),
  /** The secret before the last rotation: still opens sealed values and verifies old tokens. */
  MAILROOM_SECRET_PREVIOUS: z.union([z.literal(""), z.string().min(16)]).optional(),
  NODE_ENV: z.string().optional(),
  MAILROOM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Workspaces, keys, senders, members, templates, usage, the team (the accounts unit). */
  MAILROOM_ACCOUNTS_URL: z.string().url().default("http://127.0.0.1:7101"),
  /** Contacts, properties, suppressions, groups, segments, topics, forms, engagement (the audience unit). */
  MAILROOM_AUDIENCE_URL: z.string().url().default("http://127.0.0.1:7109"),
  MAILROOM_EMAIL_URL: z.string().url().default("http://127.0.0.1:7102"),
  MAILROOM_BROADCAST_URL: z.string().url().default("http://127.0.0.1:7103"),
  MAILROOM_RENDERER_URL: z.string().url().default("http://127.0.0.1:7104"),
  MAILROOM_DELIVERY_URL: z.string().url().default("http://127.0.0.1:7105"),
  MAILROOM_WEBHOOKS_URL: z.string().url().default("http://127.0.0.1:7107"),
  MAILROOM_AUTOMATION_URL: z.string().url().default("http://127.0.0.1:7108"),
  /** The inbound unit's Connect server (relay provider webhooks); its SMTP port is MAILROOM_INBOUND_PORT. */
  MAILROOM_INBOUND_URL: z.string().url().default("http://127.0.0.1:7106"),
  /** Port the current service's Connect server listens on (the launcher sets it). */
  MAILROOM_SERVICE_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Address every service's Connect server binds (0.0.0.0 in containers). */
  MAILROOM_SERVICE_HOST: z.string().min(1).default("127.0.0.1"),
  /** Set by the launcher and test harness: a unit exits when its parent is gone. */
  MAILROOM_EXIT_WITH_PARENT: envBool.default(false),
});

export type RawConfig = z.infer<typeof schema>;

/** What every process shares; a unit's own settings come from its `src/settings.ts`. */
export interface Config {
  httpPort: number;
  publicUrl: string;
  dataDir: string;
  natsUrl: string;
  natsReplicas: number;
  metricsToken?: string;
  mongodbUrl?: string;
  postgresUrl?: string;
  postgresPool?: number;
  secret: string;
  /** MAILROOM_SECRET_PREVIOUS (rotation): accepted for opening, never used for sealing. */
  previousSecret?: string;
  /** NODE_ENV=production. */
  production: boolean;
  logLevel: RawConfig["MAILROOM_LOG_LEVEL"];
  servicePort?: number;
  serviceHost: string;
  exitWithParent: boolean;
  urls: {
    accounts: string;
    audience: string;
    email: string;
    broadcast: string;
    renderer: string;
    delivery: string;
    webhooks: string;
    automation: string;
    inbound: string;
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const c = loadSettings(schema, env);
  const production = c.NODE_ENV === "production";
  if (production && (c.MAILROOM_SECRET === DEVELOPMENT_SECRET || c.MAILROOM_SECRET_PREVIOUS === DEVELOPMENT_SECRET)) {
    throw configError([{
      variable: "MAILROOM_SECRET",
      message:
        "NODE_ENV=production needs your own secret, not the development default " +
        "(anyone could forge tracking links and open stored DKIM keys with it). Generate one with `openssl rand -base64 32`.",
    }]);
  }

  // The directory unit became the accounts and audience units: an old setting must not be ignored in silence.
  if (env.MAILROOM_DIRECTORY_URL) {
    throw configError([{
      variable: "MAILROOM_DIRECTORY_URL",
      message: "the directory unit is now two units: set MAILROOM_ACCOUNTS_URL (workspaces, keys, senders, templates, the team) and MAILROOM_AUDIENCE_URL (contacts, suppressions, groups, segments) instead",
    }]);
  }

  if (c.MAILROOM_POSTGRES_URL && c.MAILROOM_MONGODB_URL) {
    const message = "MAILROOM_POSTGRES_URL and MAILROOM_MONGODB_URL are both set: the records live in one store, set only one of them";
    throw configError([
      { variable: "MAILROOM_POSTGRES_URL", message },
      { variable: "MAILROOM_MONGODB_URL", message },
    ]);
  }

  return {
    httpPort: c.MAILROOM_HTTP_PORT,
    publicUrl: (c.MAILROOM_PUBLIC_URL ?? `http://localhost:${c.MAILROOM_HTTP_PORT}`).replace(/\/+$/, ""),
    dataDir: path.resolve(c.MAILROOM_DATA_DIR),
    natsUrl: c.MAILROOM_NATS_URL,
    natsReplicas: c.MAILROOM_NATS_REPLICAS,
    metricsToken: c.MAILROOM_METRICS_TOKEN || undefined,
    mongodbUrl: c.MAILROOM_MONGODB_URL || undefined,
    postgresUrl: c.MAILROOM_POSTGRES_URL || undefined,
    postgresPool: c.MAILROOM_POSTGRES_POOL,
    secret: c.MAILROOM_SECRET,
    previousSecret: c.MAILROOM_SECRET_PREVIOUS || undefined,
    production,
    logLevel: c.MAILROOM_LOG_LEVEL,
    servicePort: c.MAILROOM_SERVICE_PORT,
    serviceHost: c.MAILROOM_SERVICE_HOST,
    exitWithParent: c.MAILROOM_EXIT_WITH_PARENT,
    urls: {
      accounts: c.MAILROOM_ACCOUNTS_URL,
      audience: c.MAILROOM_AUDIENCE_URL,
      email: c.MAILROOM_EMAIL_URL,
      broadcast: c.MAILROOM_BROADCAST_URL,
      renderer: c.MAILROOM_RENDERER_URL,
      delivery: c.MAILROOM_DELIVERY_URL,
      webhooks: c.MAILROOM_WEBHOOKS_URL,
      automation: c.MAILROOM_AUTOMATION_URL,
      inbound: c.MAILROOM_INBOUND_URL,
    },
  };
}

/** Default Connect port of each service, used when MAILROOM_SERVICE_PORT is unset. */
export function defaultServicePort(config: Config, service: keyof Config["urls"]): number {
  return Number(new URL(config.urls[service]).port);
}
