import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import type { Logger } from "./logger.js";
import { errorInfoOf } from "./errors.js";

export interface ConnectServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

export interface ConnectServerOptions {
  routes: (router: ConnectRouter) => void;
  port?: number;
  host?: string;
  logger: Logger;
  /** Extra readiness check for /healthz (e.g. NATS connected). */
  healthy?: () => boolean;
}

/**
 * Serves Connect routes plus GET /healthz on one HTTP/1.1 server. Requests carry an
 * x-request-id (propagated when given) that appears in the logs of every hop.
 */
export async function startConnectServer(opts: ConnectServerOptions): Promise<ConnectServer> {
  const logging: Interceptor = (next) => async (req) => {
    const requestId = req.header.get("x-request-id") ?? randomUUID();
    const started = performance.now();
    try {
      const res = await next(req);
      opts.logger.debug({ requestId, rpc: req.method.name, ms: Math.round(performance.now() - started) }, "rpc ok");
      return res;
    } catch (err) {
      const info = errorInfoOf(err);
      const log = info ? opts.logger.debug.bind(opts.logger) : opts.logger.error.bind(opts.logger);
      log({ requestId, rpc: req.method.name, code: info?.code, err: info ? undefined : err }, "rpc failed");
      throw err;
    }
  };
  const handler = connectNodeAdapter({ routes: opts.routes, interceptors: [logging] });
  const server = http.createServer((req, res) => {
    if (req.url === "/healthz") {
      const ok = opts.healthy ? opts.healthy() : true;
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok }));
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

/** A typed Connect client over HTTP/1.1 to another service. */
export function connectClient<T extends DescService>(service: T, baseUrl: string): Client<T> {
  // Binary protobuf: JSON encoding through reflection costs more CPU than the call itself.
  // No compression: by default the client accepts gzip, so every answer over 1 KiB (a
  // compiled message, a template) was gzipped by one service and gunzipped by the other,
  // CPU spent to save bytes on what is in practice a local network.
  return createClient(service, createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true, acceptCompression: [] }));
}

/**
 * Runs `close` once on SIGINT/SIGTERM and exits; a second signal exits at once.
 * Used by every main.ts so Ctrl-C in the launcher stops everything cleanly.
 */
export function onShutdown(logger: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "shutting down");
    try {
      await close();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, "shutdown failed");
      process.exit(1);
    }
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  // Started by the launcher or a test harness: never outlive it, even if it was SIGKILLed.
  if (process.env.MAILROOM_EXIT_WITH_PARENT === "1") {
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
