import { readFileSync } from "node:fs";
import { z } from "zod";
import { configError, loadSettings } from "@mailroom/kit/config.js";

/**
 * The submission unit's settings (MAILROOM_SUBMISSION_*), plus the gateway's per-key rate
 * limit and failed-key budget, which it declares too: an API key has one budget whether it
 * sends over HTTP or SMTP.
 */
const schema = z.object({
  /** The SMTP submission port (STARTTLS on it when a certificate is configured). */
  MAILROOM_SUBMISSION_PORT: z.coerce.number().int().min(0).max(65535).default(2587),
  /**
   * The address both SMTP ports bind; default MAILROOM_SERVICE_HOST (127.0.0.1 under npm start).
   * 0.0.0.0 lets apps on other machines submit without exposing the Connect services.
   */
  MAILROOM_SUBMISSION_HOST: z.string().optional(),
  /** The implicit-TLS port, opened only when a certificate is configured. */
  MAILROOM_SUBMISSION_TLS_PORT: z.coerce.number().int().min(0).max(65535).default(2465),
  /** PEM files of the certificate (chain) and its key; both or neither. */
  MAILROOM_SUBMISSION_TLS_CERT: z.string().optional(),
  MAILROOM_SUBMISSION_TLS_KEY: z.string().optional(),
  /**
   * The largest message accepted, in bytes. Attachments are at most 10 MB decoded per
   * email, which base64 makes 13.7 MB on the wire; the rest is room for the HTML and text.
   */
  MAILROOM_SUBMISSION_MAX_BYTES: z.coerce.number().int().min(1024).default(20 * 1024 * 1024),
  /**
   * Port of /healthz, /readyz and /metrics; default MAILROOM_SERVICE_PORT, as every unit. Its
   * own variable for a machine where the inbound unit's health server has that one.
   */
  MAILROOM_SUBMISSION_HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** The gateway's per-key budget (also read by the gateway, which declares it too). */
  MAILROOM_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(6000),
  MAILROOM_RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  /** Failed AUTH attempts per client address and minute (the gateway's failed-key budget). */
  MAILROOM_AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).default(20),
  /** How long a key the accounts unit accepted is trusted without asking again. */
  MAILROOM_AUTH_CACHE_MS: z.coerce.number().int().min(0).default(10_000),
});

export interface SubmissionSettings {
  port: number;
  /** Unset: MAILROOM_SERVICE_HOST. */
  host?: string;
  tlsPort: number;
  /** The certificate and key as PEM, read at start; absent: no STARTTLS, no implicit-TLS port. */
  tls?: { cert: Buffer; key: Buffer; certFile: string };
  maxMessageBytes: number;
  healthPort?: number;
  rateLimitPerMinute: number;
  rateLimitBurst: number;
  authFailuresPerMinute: number;
  authCacheMs: number;
}

/** Reads and validates the settings; a bad value (or an unreadable certificate) throws kit's ConfigError. */
export function loadSubmissionSettings(env: NodeJS.ProcessEnv = process.env): SubmissionSettings {
  const c = loadSettings(schema, env);
  const certFile = c.MAILROOM_SUBMISSION_TLS_CERT?.trim() || undefined;
  const keyFile = c.MAILROOM_SUBMISSION_TLS_KEY?.trim() || undefined;
  if (Boolean(certFile) !== Boolean(keyFile)) {
    throw configError([{ variable: certFile ? "MAILROOM_SUBMISSION_TLS_KEY" : "MAILROOM_SUBMISSION_TLS_CERT", message: "set both MAILROOM_SUBMISSION_TLS_CERT and MAILROOM_SUBMISSION_TLS_KEY, or neither" }]);
  }
  const read = (variable: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw configError([{ variable, message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }]);
    }
  };
  const tls = certFile && keyFile
    ? { cert: read("MAILROOM_SUBMISSION_TLS_CERT", certFile), key: read("MAILROOM_SUBMISSION_TLS_KEY", keyFile), certFile }
    : undefined;
  return {
    port: c.MAILROOM_SUBMISSION_PORT,
    host: c.MAILROOM_SUBMISSION_HOST?.trim() || undefined,
    tlsPort: c.MAILROOM_SUBMISSION_TLS_PORT,
    tls,
    maxMessageBytes: c.MAILROOM_SUBMISSION_MAX_BYTES,
    healthPort: c.MAILROOM_SUBMISSION_HEALTH_PORT,
    rateLimitPerMinute: c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    rateLimitBurst: c.MAILROOM_RATE_LIMIT_BURST ?? c.MAILROOM_RATE_LIMIT_PER_MINUTE,
    authFailuresPerMinute: c.MAILROOM_AUTH_FAILURES_PER_MINUTE,
    authCacheMs: c.MAILROOM_AUTH_CACHE_MS,
  };
}
