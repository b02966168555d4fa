import { pino, type Logger } from "pino";

export type { Logger };

const SECRET_FIELDS = ["apiKey", "api_key", "plainKey", "password", "pass", "privateKeyPem", "privateKey", "authorization", "smtpUrl", "secret"];

/** Each secret field at the top level and up to two objects deep (pino wildcards match one level). */
const REDACTED_PATHS = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]);

/**
 * Structured JSON logs. Secrets never reach them: keys, passwords and auth headers
 * are redacted wherever they appear in a logged object.
 */
export function createLogger(
  service: string,
  level: string = process.env.MAILROOM_LOG_LEVEL ?? "info",
  destination?: NodeJS.WritableStream,
): Logger {
  const options = {
    name: service,
    level,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Strips credentials from a URL before it is logged or shown. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    // Tokens also travel as query parameters (?password=, ?token=): keep only their names.
    for (const key of [...u.searchParams.keys()]) u.searchParams.set(key, "***");
    return u.toString();
  } catch {
    return "[unparseable url]";
  }
}
