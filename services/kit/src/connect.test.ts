import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { connectClient, requestIdOfCall, startConnectServer, type ConnectServer } from "./connect.js";
import { createLogger } from "./logger.js";
import { requestContext, runWithRequestContext } from "./request-context.js";

describe("kit Connect server and clients", () => {
  let server: ConnectServer;
  const acceptEncodings: Array<string | null> = [];
  const handlerRequestIds: Array<string | undefined> = [];
  beforeAll(async () => {
    server = await startConnectServer({
      logger: createLogger("kit-connect-test"),
      routes: (router) =>
        router.service(RendererService, {
          detectVariables(req, ctx) {
            acceptEncodings.push(ctx.requestHeader.get("accept-encoding"));
            handlerRequestIds.push(requestContext()?.requestId);
            // Well over the 1 KiB above which a Connect server compresses for a client that accepts it.
            return { detected: Array.from({ length: 500 }, (_, i) => `${req.html}${i}`), unknown: [] };
          },
        }),
    });
  });
  afterAll(() => server.close());

  it("clients ask for uncompressed answers (gzip on every large answer cost both sides CPU) and get them intact", async () => {
    const client = connectClient(RendererService, server.url);
    const res = await client.detectVariables({ html: "variable_" });
    expect(res.detected).toHaveLength(500);
    expect(res.detected[499]).toBe("variable_499");
    expect(acceptEncodings).toHaveLength(1);
    expect(acceptEncodings[0] ?? "").not.toMatch(/gzip|br/);
  });

  it("handlers run in the request's context, and a client called inside a context carries its id on", async () => {
    const client = connectClient(RendererService, server.url);
    await runWithRequestContext("trace-kit-1", () => client.detectVariables({ html: "x" }));
    await client.detectVariables({ html: "x" }, { headers: { "x-request-id": "trace-kit-2" } });
    await client.detectVariables({ html: "x" });
    expect(handlerRequestIds.slice(-3, -1)).toEqual(["trace-kit-1", "trace-kit-2"]);
    // No id given: the server names the request itself.
    expect(handlerRequestIds.at(-1)).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("without the async context, a handler reads the request id from the call and runs outside any context", async () => {
    const seen: Array<{ ofCall: string; context: string | undefined }> = [];
    const explicit = await startConnectServer({
      logger: createLogger("kit-connect-test"),
      asyncRequestContext: false,
      routes: (router) =>
        router.service(RendererService, {
          detectVariables(_req, ctx) {
            seen.push({ ofCall: requestIdOfCall(ctx), context: requestContext()?.requestId });
            return { detected: [], unknown: [] };
          },
        }),
    });
    try {
      const client = connectClient(RendererService, explicit.url);
      await client.detectVariables({ html: "x" }, { headers: { "x-request-id": "trace-kit-3" } });
      await client.detectVariables({ html: "x" });
      expect(seen[0]).toEqual({ ofCall: "trace-kit-3", context: undefined });
      expect(seen[1]!.ofCall).toMatch(/^[0-9a-f-]{36}$/);
      expect(seen[1]!.context).toBeUndefined();
    } finally {
      await explicit.close();
    }
  });

  it("the server answers GET /healthz beside the routes", async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });
});

describe("kit Connect: domain errors of streaming handlers", () => {
  it("cross as their ErrorInfo (code and status), also when thrown after the first message", async () => {
    const { ReceivingService } = await import("@mailroom/proto/inbound/v1/inbound_pb.js");
    const { notFound, errorInfoOf } = await import("./errors.js");
    const { createClient } = await import("@connectrpc/connect");
    const { memoryTransport } = await import("./connect.js");
    const routes = (router: import("@connectrpc/connect").ConnectRouter) =>
      router.service(ReceivingService, {
        async *getReceivedRaw() {
          throw notFound("received_email_not_found", "no such email");
        },
        async *getReceivedAttachment() {
          yield { data: new Uint8Array([1]) };
          throw notFound("received_attachment_not_found", "gone mid-way");
        },
      });
    const server = await startConnectServer({ logger: createLogger("kit-connect-stream-test", "silent"), routes });
    try {
      for (const client of [connectClient(ReceivingService, server.url), createClient(ReceivingService, memoryTransport(routes))]) {
        const codeOf = async (stream: AsyncIterable<unknown>) => {
          try {
            for await (const _ of stream);
          } catch (err) {
            const info = errorInfoOf(err);
            return [info?.code, info?.httpStatus];
          }
          return undefined;
        };
        expect(await codeOf(client.getReceivedRaw({}))).toEqual(["received_email_not_found", 404]);
        expect(await codeOf(client.getReceivedAttachment({}))).toEqual(["received_attachment_not_found", 404]);
      }
    } finally {
      await server.close();
    }
  });
});
