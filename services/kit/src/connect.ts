import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, createContextKey, createRouterTransport, ConnectError, type Client, type ConnectRouter, type HandlerContext, type Interceptor, type Transport } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import type { Logger } from "./logger.js";
import { loadConfig } from "./config.js";
import { AppError, errorInfoOf, toConnectError } from "./errors.js";
import { checkReadiness, processReadyChecks, type ReadyCheck } from "./health.js";
import { requestContext, runWithRequestContext } from "./request-context.js";
import { auditInterceptor, type AuditSink } from "./audit.js";
import { AUDIT_TABLE } from "./audit-table.js";
import { collectProcessMetrics, counter, histogram, metricsAuthorized, scrapeMetrics, secondsSince } from "./metrics.js";
import { extractTraceContext, injectTraceContext, REQUEST_ID_ATTRIBUTE, SpanKind, startSpan, stopTracing, tracingOn, withContext } from "./tracing.js";

export interface ConnectServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * The one place a domain error becomes a ConnectError: services throw AppError and never
 * build ConnectErrors themselves.
 */
export const appErrorInterceptor: Interceptor = (next) => async (req) => {
  try {
    const res = await next(req);
    // A streaming handler throws while its messages are read, after next() returned: there too.
    return res.stream ? { ...res, message: withConnectErrors(res.message) } : res;
  } catch (err) {
    throw err instanceof AppError ? toConnectError(err) : err;
  }
};

async function* withConnectErrors<T>(messages: AsyncIterable<T>): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw err instanceof AppError ? toConnectError(err) : err;
  }
}

/** An in-memory transport to `routes` with the same interceptors a real server has (tests, wiring). */
export function memoryTransport(routes: (router: ConnectRouter) => void): Transport {
  return createRouterTransport(routes, { router: { interceptors: [appErrorInterceptor] } });
}

const rpcHandled = counter("mailroom_rpc_server_handled_total", "RPCs served, by service, method and Connect code (ok when it succeeded).", [
  "service",
  "method",
  "code",
]);
const rpcSeconds = histogram("mailroom_rpc_server_duration_seconds", "Time to serve an RPC, by service and method.", ["service", "method"]);

/** Counts and times every RPC; outside appErrorInterceptor, so it sees the Connect code. */
export const rpcMetricsInterceptor: Interceptor = (next) => async (req) => {
  const started = performance.now();
  const labels = { service: req.service.typeName, method: req.method.name };
  try {
    const res = await next(req);
    rpcHandled.inc({ ...labels, code: "ok" });
    return res;
  } catch (err) {
    rpcHandled.inc({ ...labels, code: codeToString(ConnectError.from(err).code) });
    throw err;
  } finally {
    rpcSeconds.observe(labels, secondsSince(started));
  }
};

export interface ConnectServerOptions {
  routes: (router: ConnectRouter) => void;
  port?: number;
  host?: string;
  logger: Logger;
  /** Extra liveness condition for /healthz (e.g. NATS not closed). */
  healthy?: () => boolean;
  /**
   * Extra checks for /readyz, beside those kit registered for this process (its NATS
   * connections and stores, see health.ts).
   */
  ready?: ReadyCheck[];
  /** Bearer token GET /metrics requires; default MAILROOM_METRICS_TOKEN (none: open). */
  metricsToken?: string;
  /**
   * Whether handlers run inside the request's AsyncLocalStorage context (default true), so
   * their log lines and the RPCs they make name the request without being told. A service
   * whose handlers pass `requestIdOfCall(ctx)` on themselves turns it off: on Node 20 the
   * context's promise hooks cost a busy process about 4 % of its CPU and 7 % of its garbage.
   */
  asyncRequestContext?: boolean;
  /**
   * Where the audit entries of this server's state-changing RPCs go (audit.ts: calls that
   * name an actor, rows of audit-table.ts). Every unit serving a client-facing RPC passes one.
   */
  audit?: AuditSink;
}

/** Connect codes that are the server's failure (OpenTelemetry's RPC conventions); the rest are the caller's. */
const SERVER_FAILURE_CODES = new Set(["unknown", "deadline_exceeded", "unimplemented", "internal", "unavailable", "data_loss"]);

/**
 * A span per RPC, on both sides: the client's carries the trace context in the request's
 * headers (traceparent), the server's continues it. Nothing at all while tracing is off.
 */
function rpcSpan(kind: SpanKind.CLIENT | SpanKind.SERVER): Interceptor {
  return (next) => async (req) => {
    if (!tracingOn()) return next(req);
    const started = startSpan(`${req.service.typeName}/${req.method.name}`, {
      kind,
      parent: kind === SpanKind.SERVER ? extractTraceContext(req.header) : undefined,
      attributes: { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name },
    })!;
    // Outside the logging interceptor (whose lines then name the trace): the id it would make, made here.
    let requestId = req.header.get("x-request-id") ?? (kind === SpanKind.CLIENT ? requestContext()?.requestId : undefined);
    if (!requestId && kind === SpanKind.SERVER) req.header.set("x-request-id", (requestId = randomUUID()));
    if (requestId) started.span.setAttribute(REQUEST_ID_ATTRIBUTE, requestId);
    if (kind === SpanKind.CLIENT) injectTraceContext(req.header, started.context);
    try {
      return await withContext(started.context, () => next(req));
    } catch (err) {
      const code = codeToString(ConnectError.from(err).code);
      started.span.setAttribute("rpc.connect_rpc.error_code", code);
      if (kind === SpanKind.CLIENT || SERVER_FAILURE_CODES.has(code)) started.span.setStatus({ code: 2, message: code });
      throw err;
    } finally {
      started.span.end();
    }
  };
}

/** The request id of the RPC being served (x-request-id, or one made for it). */
const requestIdKey = createContextKey("", { description: "x-request-id" });

/** The request id of the RPC being served, for a handler that passes it on explicitly. */
export const requestIdOfCall = (ctx: HandlerContext): string => ctx.values.get(requestIdKey);

/**
 * Serves Connect routes plus the operations endpoints on one HTTP/1.1 server:
 *   GET /healthz  alive (200 while the process answers)
 *   GET /readyz   dependencies reachable (NATS connected, store answering, `ready` checks): 200 or 503
 *   GET /metrics  Prometheus metrics of this process
 * Requests carry an x-request-id (propagated when given) that appears in the logs of every hop.
 */
export async function startConnectServer(opts: ConnectServerOptions): Promise<ConnectServer> {
  collectProcessMetrics();
  const metricsToken = opts.metricsToken ?? loadConfig().metricsToken;
  // Traces keep their context in AsyncLocalStorage anyway: the request id's costs nothing more.
  const asyncContext = (opts.asyncRequestContext ?? true) || tracingOn();
  const logging: Interceptor = (next) => async (req) => {
    const requestId = req.header.get("x-request-id") ?? randomUUID();
    const started = performance.now();
    req.contextValues.set(requestIdKey, requestId);
    try {
      // The handler (and whatever it logs or publishes) runs inside the request's context.
      const res = await (asyncContext ? runWithRequestContext(requestId, () => next(req)) : next(req));
      opts.logger.debug({ requestId, rpc: req.method.name, ms: Math.round(performance.now() - started) }, "rpc ok");
      return res;
    } catch (err) {
      const info = errorInfoOf(err);
      // Refusals (4xx) are the caller's business; a 5xx AppError (a neighbour down) is an outage.
      const log = info && info.httpStatus < 500 ? opts.logger.debug.bind(opts.logger) : opts.logger.error.bind(opts.logger);
      log({ requestId, rpc: req.method.name, code: info?.code, err: info ? undefined : err }, "rpc failed");
      throw err;
    }
  };
  // Audit inside the error mapping: only a call that succeeded is recorded.
  const audit = opts.audit ? [auditInterceptor({ sink: opts.audit, table: AUDIT_TABLE, requestIdOf: (values) => values.get(requestIdKey) })] : [];
  const handler = connectNodeAdapter({ routes: opts.routes, interceptors: [rpcSpan(SpanKind.SERVER), logging, rpcMetricsInterceptor, ...audit, appErrorInterceptor] });
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const path = req.url?.split("?")[0];
    if (req.method === "GET" && path === "/healthz") {
      const ok = opts.healthy ? opts.healthy() : true;
      return json(res, ok ? 200 : 503, { ok });
    }
    if (req.method === "GET" && path === "/readyz") {
      void checkReadiness([...processReadyChecks(), ...(opts.ready ?? [])]).then((report) => json(res, report.ok ? 200 : 503, report));
      return;
    }
    if (req.method === "GET" && path === "/metrics") {
      if (!metricsAuthorized(req.headers.authorization, metricsToken)) return json(res, 401, { ok: false, error: "metrics need the bearer token" });
      void scrapeMetrics().then(
        ({ contentType, body }) => {
          res.writeHead(200, { "content-type": contentType });
          res.end(body);
        },
        (err) => {
          opts.logger.error({ err }, "metrics scrape failed");
          json(res, 500, { ok: false });
        },
      );
      return;
    }
    handler(req, res);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${opts.host ?? "127.0.0.1"}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 5_000).unref();
      }),
  };
}

/** Client interceptor: an RPC made inside a request context carries its request id on. */
export const forwardRequestId: Interceptor = (next) => (req) => {
  const requestId = requestContext()?.requestId;
  if (requestId && !req.header.has("x-request-id")) req.header.set("x-request-id", requestId);
  return next(req);
};

/** A typed Connect client over HTTP/1.1 to another service (`interceptors`: e.g. the gateway's request id). */
export function connectClient<T extends DescService>(service: T, baseUrl: string, interceptors: Interceptor[] = []): Client<T> {
  // Binary protobuf: JSON encoding through reflection costs more CPU than the call itself.
  // No compression: by default the client accepts gzip, so every answer over 1 KiB (a
  // compiled message, a template) was gzipped by one service and gunzipped by the other,
  // CPU spent to save bytes on what is in practice a local network.
  return createClient(
    service,
    createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true, acceptCompression: [], interceptors: [...interceptors, forwardRequestId, rpcSpan(SpanKind.CLIENT)] }),
  );
}

/**
 * Runs `close` once on SIGINT/SIGTERM and exits; a second signal exits at once.
 * Used by every main.ts so Ctrl-C in the launcher stops everything cleanly.
 */
export function onShutdown(logger: Logger, close: () => Promise<void>, exitWithParent = loadConfig().exitWithParent): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "shutting down");
    try {
      await close();
      // What the exporter still holds is sent before the process goes.
      await stopTracing();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, "shutdown failed");
      process.exit(1);
    }
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  // Started by the launcher or a test harness: never outlive it, even if it was SIGKILLed.
  if (exitWithParent) {
    const parent = process.ppid;
    setInterval(() => {
      try {
        process.kill(parent, 0);
      } catch {
        void stop("parent exited");
      }
    }, 1_000).unref();
  }
}
