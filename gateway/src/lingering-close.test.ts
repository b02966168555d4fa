import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { buildGateway } from "./app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { BATCH_BODY_LIMIT_BYTES } from "@mailroom/http/errors.js";
import type { DrainLimits } from "@mailroom/http/deps.js";
import { registerSendBatch } from "./routes/emails-batch.js";

/**
 * An answer sent while the request body is still arriving (413 over the body limit, 401 before
 * the body is read) reaches a client that is still uploading, every time: the gateway on a real
 * port, a real TCP client that sends its whole body before it stops (as clients that read the
 * answer only after sending do), never a reset. A client that never stops sending is cut off.
 */

const KEY = "mr_test_good_key";
const MB = 1024 * 1024;
const UPLOAD = 26 * MB;

async function gateway(drainLimits?: DrainLimits): Promise<{ app: FastifyInstance; port: number }> {
  const accounts = createClient(AccountsService, memoryTransport(({ service }) => {
    service(AccountsService, {
      authenticate(req) {
        if (req.apiKey === KEY) return { workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] };
        throw new ConnectError("unknown key", Code.Unauthenticated);
      },
    });
  }));
  const deps: GatewayDeps = {
    config: loadConfig({}),
    logger: createLogger("gateway-lingering-close-test", "silent"),
    clients: { accounts } as unknown as ServiceClients,
    rateLimitPerMinute: 0,
    authCacheMs: 60_000,
    drainLimits,
  };
  const app = await buildGateway(deps, { api: [registerSendBatch], public: [] });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return { app, port: (app.server.address() as net.AddressInfo).port };
}

interface Upload {
  /** Body bytes the client handed to its socket. */
  sent: number;
  /** The client's socket error (EPIPE, ECONNRESET), if any. */
  error?: string;
  /** Milliseconds from the first byte of the answer to the connection's end (error or close). */
  afterAnswerMs?: number;
  status?: number;
  headers: Record<string, string>;
  body?: { code?: string; statusCode?: number };
}

interface UploadOptions {
  path?: string;
  /** Content-Length (declared up front) or chunked framing. */
  framing: "content-length" | "chunked";
  /** Body bytes to send; Infinity: chunked, never ends. */
  bytes: number;
  /** Milliseconds between chunks (a slow uploader); 0: as fast as the socket takes them. */
  paceMs?: number;
  chunkBytes?: number;
  authorized?: boolean;
}

/**
 * One request over a raw TCP socket: the whole body written (with backpressure) whatever
 * arrives meanwhile, then the answer read to the server's end of the connection.
 */
function upload(port: number, opts: UploadOptions): Promise<Upload> {
  const chunk = Buffer.alloc(opts.chunkBytes ?? 256 * 1024, "x");
  const chunked = opts.framing === "chunked";
  return new Promise((resolve) => {
    // Half-open: the server's FIN after its answer must not stop the upload.
    const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    const received: Buffer[] = [];
    let sent = 0;
    let answeredAt: number | undefined;
    let error: string | undefined;
    let done = false;

    const finish = () => {
      if (done) return;
      done = true;
      resolve({ sent, error, afterAnswerMs: answeredAt === undefined ? undefined : Date.now() - answeredAt, ...parse(Buffer.concat(received)) });
    };
    socket.on("data", (d) => {
      answeredAt ??= Date.now();
      received.push(d);
    });
    socket.on("error", (err) => {
      error = (err as NodeJS.ErrnoException).code ?? err.message;
      finish();
    });
    socket.on("close", finish);
    // The server ended its side: once the upload is over, the client closes its own.
    socket.on("end", () => {
      if (uploaded) socket.end();
    });

    let uploaded = false;
    const pump = () => {
      while (!socket.destroyed && sent < opts.bytes) {
        const n = Math.min(chunk.length, opts.bytes - sent);
        const piece = n === chunk.length ? chunk : chunk.subarray(0, n);
        sent += n;
        const ok = socket.write(chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), piece, Buffer.from("\r\n")]) : piece);
        if (!ok) return void socket.once("drain", pump);
        if (opts.paceMs) return void setTimeout(pump, opts.paceMs);
      }
      if (socket.destroyed || uploaded) return;
      uploaded = true;
      if (chunked) socket.write("0\r\n\r\n");
      if (socket.readableEnded) socket.end();
    };
    socket.once("connect", () => {
      const head = [
        `POST ${opts.path ?? "/v1/emails/batch"} HTTP/1.1`,
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        ...(opts.authorized === false ? [] : [`Authorization: Bearer ${KEY}`]),
        chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${opts.bytes}`,
        "",
        "",
      ].join("\r\n");
      socket.write(head);
      pump();
    });
  });
}

function parse(raw: Buffer): Pick<Upload, "status" | "headers" | "body"> {
  const text = raw.toString("utf8");
  const split = text.indexOf("\r\n\r\n");
  if (split < 0) return { headers: {} };
  const [statusLine, ...lines] = text.slice(0, split).split("\r\n");
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
  const length = Number(headers["content-length"]);
  const body = text.slice(split + 4, split + 4 + length);
  let json: Upload["body"];
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body: json };
}

describe("answers to requests whose body is still arriving", () => {
  let gw: Awaited<ReturnType<typeof gateway>>;
  /** Drains at most 8 MB or 1.5 s after its answer. */
  let tight: Awaited<ReturnType<typeof gateway>>;
  beforeAll(async () => {
    gw = await gateway();
    tight = await gateway({ ms: 1500, bytes: 8 * MB });
  });
  afterAll(async () => {
    await gw?.app.close();
    await tight?.app.close();
  });

  it.each(["content-length", "chunked"] as const)("answers a 26 MB batch (%s) with the 413 body every time, after reading the upload to its end", async (framing) => {
    expect(UPLOAD).toBeGreaterThan(BATCH_BODY_LIMIT_BYTES);
    for (let run = 0; run < 6; run++) {
      // As fast as loopback takes it, or 256 KB every 2 ms: still sending when the answer comes.
      const paced = run % 2 === 1;
      const res = await upload(gw.port, { framing, bytes: UPLOAD, ...(paced ? { chunkBytes: 256 * 1024, paceMs: 2 } : {}) });
      expect(res.error, `run ${run}${paced ? " (paced)" : ""}: the upload was cut off after ${res.sent} bytes`).toBeUndefined();
      expect(res.sent).toBe(UPLOAD);
      expect(res.status, `run ${run}`).toBe(413);
      expect(res.headers.connection).toBe("close");
      expect(res.body).toMatchObject({ statusCode: 413, code: "payload_too_large" });
    }
  });

  it("answers the same way on any route: a 401 sent before the body is read, a 413 over the default 2 MB", async () => {
    for (const framing of ["content-length", "chunked"] as const) {
      const unauthorized = await upload(gw.port, { framing, bytes: UPLOAD, authorized: false });
      expect(unauthorized, framing).toMatchObject({ error: undefined, sent: UPLOAD, status: 401, headers: { connection: "close" }, body: { code: "unauthorized" } });
      const elsewhere = await upload(gw.port, { framing, bytes: UPLOAD, path: "/v1/nope" });
      expect(elsewhere, framing).toMatchObject({ error: undefined, sent: UPLOAD, status: 413, headers: { connection: "close" }, body: { code: "payload_too_large" } });
    }
  });

  it("cuts off a client that never stops sending, after the answer and the drain bound in bytes", async () => {
    const res = await upload(tight.port, { framing: "chunked", bytes: Infinity });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ code: "payload_too_large" });
    expect(res.error).toMatch(/^(ECONNRESET|EPIPE)$/);
    // 25 MB to the refusal, 8 MB drained, plus what the two sockets' buffers hold.
    expect(res.sent).toBeLessThan(BATCH_BODY_LIMIT_BYTES + 8 * MB + 24 * MB);
  });

  it("cuts off a slow client that never stops sending, after the answer and the drain bound in time", async () => {
    const res = await upload(tight.port, { framing: "chunked", bytes: Infinity, chunkBytes: 16 * 1024, paceMs: 20, authorized: false });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: "unauthorized" });
    expect(res.error).toMatch(/^(ECONNRESET|EPIPE)$/);
    expect(res.afterAnswerMs).toBeGreaterThanOrEqual(1_400);
    expect(res.afterAnswerMs).toBeLessThan(10_000);
  });
});
