import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "pino";

const LEVELS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;
type Level = (typeof LEVELS)[number];

/**
 * Each request's logger (fastify's `childLoggerFactory`), made into pino's child only when
 * something is logged at an enabled level. pino runs a child's bindings through the
 * redaction paths as it makes it: that was 2 % of the gateway's CPU per request, for a
 * logger most requests never write to. The lines it writes are the child's, unchanged.
 */
export function lazyRequestLogger(parent: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  const enabled = (parent as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.bind(parent);
  // A route's own log level, or a logger that cannot say which levels it writes: made now.
  if (opts.level !== undefined || !enabled) return parent.child(bindings, opts);
  let child: FastifyBaseLogger | undefined;
  const made = () => (child ??= parent.child(bindings, opts));
  const write = (level: Level) =>
    ((...args: unknown[]) => {
      if (child || enabled(level)) (made()[level] as (...a: unknown[]) => void)(...args);
    }) as FastifyBaseLogger[Level];
  return {
    get level() {
      return child?.level ?? parent.level;
    },
    set level(level: string) {
      made().level = level;
    },
    fatal: write("fatal"),
    error: write("error"),
    warn: write("warn"),
    info: write("info"),
    debug: write("debug"),
    trace: write("trace"),
    silent: () => undefined,
    child: (more: Bindings, moreOpts?: ChildLoggerOptions) => made().child(more, moreOpts),
  };
}
