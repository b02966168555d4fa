import { z } from "zod";
import path from "node:path";

/**
 * One validated config object for every process, read from MAILROOM_* variables.
 * Service URLs default to the ports the local launcher uses.
 */
const schema = z.object({
  MAILROOM_HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  MAILROOM_HTTP_HOST: z.string().default("127.0.0.1"),
  MAILROOM_PUBLIC_URL: z.string().url().optional(),
  MAILROOM_DATA_DIR: z.string().default(path.resolve(".mailroom")),
  MAILROOM_NATS_URL: z.string().default("nats://127.0.0.1:4222"),
  MAILROOM_MONGODB_URL: z.string().optional(),
  MAILROOM_SMTP_URL: z.string().optional(),
  MAILROOM_BOOTSTRAP: z.string().optional(),
  MAILROOM_SECRET: z.string().min(16).default("mailroom-development-secret-change-me"),
  MAILROOM_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  MAILROOM_DIRECTORY_URL: z.string().url().default("http://127.0.0.1:7101"),
  MAILROOM_EMAIL_URL: z.string().url().default("http://127.0.0.1:7102"),
  MAILROOM_BROADCAST_URL: z.string().url().default("http://127.0.0.1:7103"),
  MAILROOM_RENDERER_URL: z.string().url().default("http://127.0.0.1:7104"),
  MAILROOM_DELIVERY_URL: z.string().url().default("http://127.0.0.1:7105"),
  /** Port the current service's Connect server listens on (the launcher sets it). */
  MAILROOM_SERVICE_PORT: z.coerce.number().int().min(0).max(65535).optional(),
});

export type RawConfig = z.infer<typeof schema>;

export interface Config {
  httpPort: number;
  httpHost: string;
  publicUrl: string;
  dataDir: string;
  natsUrl: string;
  mongodbUrl?: string;
  smtpUrl?: string;
  bootstrapFile?: string;
  secret: string;
  logLevel: RawConfig["MAILROOM_LOG_LEVEL"];
  servicePort?: number;
  urls: {
    directory: string;
    email: string;
    broadcast: string;
    renderer: string;
    delivery: string;
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
  return {
    httpPort: c.MAILROOM_HTTP_PORT,
    httpHost: c.MAILROOM_HTTP_HOST,
    publicUrl: (c.MAILROOM_PUBLIC_URL ?? `http://localhost:${c.MAILROOM_HTTP_PORT}`).replace(/\/+$/, ""),
    dataDir: path.resolve(c.MAILROOM_DATA_DIR),
    natsUrl: c.MAILROOM_NATS_URL,
    mongodbUrl: c.MAILROOM_MONGODB_URL || undefined,
    smtpUrl: c.MAILROOM_SMTP_URL || undefined,
    bootstrapFile: c.MAILROOM_BOOTSTRAP || undefined,
    secret: c.MAILROOM_SECRET,
    logLevel: c.MAILROOM_LOG_LEVEL,
    servicePort: c.MAILROOM_SERVICE_PORT,
    urls: {
      directory: c.MAILROOM_DIRECTORY_URL,
      email: c.MAILROOM_EMAIL_URL,
      broadcast: c.MAILROOM_BROADCAST_URL,
      renderer: c.MAILROOM_RENDERER_URL,
      delivery: c.MAILROOM_DELIVERY_URL,
    },
  };
}

/** Default Connect port of each service, used when MAILROOM_SERVICE_PORT is unset. */
export function defaultServicePort(config: Config, service: keyof Config["urls"]): number {
  return Number(new URL(config.urls[service]).port);
}
