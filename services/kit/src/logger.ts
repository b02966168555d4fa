import { pino, type Logger } from "pino";
import { requestContext } from "./request-context.js";
import { traceLogFields, tracingOn } from "./tracing.js";

export type { Logger };

const SECRET_FIELDS = ["apiKey", "api_key", "plainKey", "password", "pass", "privateKeyPem", "privateKey", "authorization", "smtpUrl", "secret", "token"];

/** Each secret field at the top level and up to two objects deep (pino wildcards match one level). */
const REDACTED_PATHS = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`]);

/**
 * Structured JSON logs, with the current request id (request-context.ts). Secrets never reach them: keys, passwords and auth headers
 * are redacted wherever they appear in a logged object.
 */
export function createLogger(
  service: string,
  level: string = "info",
  destination?: NodeJS.WritableStream,
): Logger {
  const options = {
    name: service,
    level,
    redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
    // Inside an RPC or a queued job every line names its request id, so one grep follows
    // an email across processes. A line that sets requestId itself keeps its own.
    // With traces on, the trace and span ids sit next to it (the fields pino's OpenTelemetry
    // instrumentation uses, which Grafana and others link from a log line to its trace).
    mixin: (mergeObject: object) => {
      const requestId = requestContext()?.requestId;
      const fields = requestId && !("requestId" in mergeObject) ? { requestId } : {};
      return tracingOn() ? { ...fields, ...traceLogFields() } : fields;
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Strips credentials from a URL before it is logged or shown. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    // The user name too: some relays take a token as both (Postmark's server token).
    if (u.username) u.username = "***";
    if (u.password) u.password = "***";
    // Tokens also travel as query parameters (?password=, ?token=): keep only their names.
    for (const key of [...u.searchParams.keys()]) u.searchParams.set(key, "***");
    return u.toString();
  } catch {
    return "[unparseable url]";
  }
}
