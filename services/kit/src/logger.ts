import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Secrets never reach them: keys, passwords and auth headers
 * are redacted wherever they appear in a logged object.
 */
export function createLogger(service: string, level: string = process.env.MAILROOM_LOG_LEVEL ?? "info"): Logger {
  return pino({
    name: service,
    level,
    redact: {
      paths: [
        "apiKey", "*.apiKey", "api_key", "*.api_key", "plainKey", "*.plainKey",
        "password", "*.password", "pass", "*.pass", "privateKeyPem", "*.privateKeyPem",
        "authorization", "*.authorization", "headers.authorization", "req.headers.authorization",
        "smtpUrl", "*.smtpUrl", "secret", "*.secret",
      ],
      censor: "[redacted]",
    },
  });
}

/** Strips credentials from a URL before it is logged or shown. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "[unparseable url]";
  }
}
