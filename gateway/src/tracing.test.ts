import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { connectClient, startConnectServer, type ConnectServer } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { startTracing, stopTracing, tracingOn } from "@mailroom/kit/tracing.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { KIND, otlpEnv, startOtlpReceiver, withEnv, type OtlpReceiver, type ReceivedSpan } from "../../test/harness/otlp-receiver.js";
import { buildGateway } from "./app.js";
import { rpcOptions, type GatewayDeps, type ServiceClients } from "@mailroom/http/deps.js";

const logger = createLogger("gateway-test", "silent");
const KEY = "mr_test_good_key";
const CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";

/** A gateway whose accounts unit is a real Connect server: its client opens real CLIENT spans. */
async function gatewayOver(accounts: ConnectServer): Promise<FastifyInstance> {
  const client = connectClient(AccountsService, accounts.url);
  const deps: GatewayDeps = {
    config: loadConfig({}),
    logger,
    clients: { accounts: client } as unknown as ServiceClients,
    rateLimitPerMinute: 0,
    // Every request asks the accounts unit: each trace then holds auth's RPC.
    authCacheMs: 0,
  };
  return buildGateway(deps, {
    api: [
      // After the body is parsed, the handler makes an RPC of its own: it must stay in the trace.
      (scope) =>
        scope.post("/v1/contacts/:email", async (request) => {
          await client.authenticate({ apiKey: KEY }, rpcOptions(request));
          return { ok: true };
        }),
      (scope) =>
        scope.get("/v1/broken", async () => {
          throw new Error("a bug");
        }),
      (scope) =>
        scope.get("/v1/slow", async () => {
          await new Promise((r) => setTimeout(r, 300));
          return { ok: true };
        }),
    ],
    public: [],
  });
}

describe("the gateway's request span", () => {
  let receiver: OtlpReceiver;
  let accounts: ConnectServer;
  let untraced: FastifyInstance;
  let traced: FastifyInstance;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    accounts = await startConnectServer({
      logger,
      routes: (router) =>
        router.service(AccountsService, {
          authenticate(req) {
            if (req.apiKey === KEY) return { workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] };
            throw new ConnectError("unknown key", Code.Unauthenticated);
          },
        }),
    });
    // Built while tracing is off: it must carry nothing of it, even once tracing starts.
    untraced = await gatewayOver(accounts);
    expect(await withEnv(otlpEnv(receiver), () => startTracing("gateway-test"))).toBe(true);
    traced = await gatewayOver(accounts);
  }, 30_000);

  afterAll(async () => {
    await untraced?.close();
    await traced?.close();
    await stopTracing();
    await accounts?.close();
    await receiver?.close();
  });

  // The accounts unit's Connect server runs in this process too: its SERVER spans are the RPC's.
  const isRequestSpan = (s: ReceivedSpan, requestId: string) => s.kind === KIND.SERVER && !("rpc.system" in s.attributes) && s.attributes["mailroom.request_id"] === requestId;
  const requestSpan = async (requestId: string): Promise<ReceivedSpan> => {
    const spans = await receiver.waitFor((all) => all.some((s) => isRequestSpan(s, requestId)));
    const mine = spans.filter((s) => isRequestSpan(s, requestId));
    expect(mine).toHaveLength(1);
    return mine[0]!;
  };
  // Over a real socket, the body sent a moment after the headers: it then arrives in the
  // socket's async context, not the request's (inject, or a body in the headers' packet, is
  // read inside the request's context and would hide a handler that loses it).
  const post = async (app: FastifyInstance, requestId: string, headers: Record<string, string> = {}) => {
    if (!app.server.listening) await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = app.server.address() as AddressInfo;
    const body = JSON.stringify({ firstName: "Alice" });
    return new Promise<{ statusCode: number }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          // An address in the path and a secret in the query: neither may reach a span.
          path: "/v1/contacts/alice%40example.com?api_key=s3cret",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "x-request-id": requestId, ...headers },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve({ statusCode: res.statusCode ?? 0 }));
        },
      );
      req.on("error", reject);
      req.flushHeaders();
      setTimeout(() => req.end(body), 50);
    });
  };

  it("adds no hook or request decorator to a gateway built with tracing off", async () => {
    expect(untraced.hasRequestDecorator("traceSpan")).toBe(false);
    expect(traced.hasRequestDecorator("traceSpan")).toBe(true);
    expect(tracingOn()).toBe(true);
    expect((await post(untraced, "req-untraced")).statusCode).toBe(200);
    // The traced gateway's request is exported after the untraced one's would have been.
    expect((await post(traced, "req-after-untraced")).statusCode).toBe(200);
    await requestSpan("req-after-untraced");
    expect(receiver.spans.filter((s) => isRequestSpan(s, "req-untraced"))).toEqual([]);
  });

  it("names a new trace's span by its route template, with status and request id; auth's and the handler's RPCs are its children", async () => {
    expect((await post(traced, "req-new-trace")).statusCode).toBe(200);
    const span = await requestSpan("req-new-trace");
    expect(span.name).toBe("POST /v1/contacts/:email");
    expect(span.parentSpanId).toBeUndefined();
    expect(span.statusCode).toBe(0);
    expect(span.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/contacts/:email",
      "http.response.status_code": 200,
      "mailroom.request_id": "req-new-trace",
    });
    // Two Authenticate calls: the auth hook's (before the body) and the handler's (after it).
    const spans = await receiver.waitFor((all) => all.filter((s) => s.kind === KIND.CLIENT && s.parentSpanId === span.spanId).length >= 2);
    const children = spans.filter((s) => s.kind === KIND.CLIENT && s.parentSpanId === span.spanId);
    expect(children.map((s) => s.name)).toEqual(["mailroom.accounts.v1.AccountsService/Authenticate", "mailroom.accounts.v1.AccountsService/Authenticate"]);
    expect(children.every((s) => s.traceId === span.traceId)).toBe(true);
  });

  it("continues the caller's traceparent", async () => {
    const res = await post(traced, "req-continued", { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` });
    expect(res.statusCode).toBe(200);
    const span = await requestSpan("req-continued");
    expect(span.traceId).toBe(CALLER_TRACE);
    expect(span.parentSpanId).toBe(CALLER_SPAN);
  });

  it("fails the span for a 5xx only; a 4xx or an unknown route leaves its status unset", async () => {
    expect((await traced.inject({ method: "GET", url: "/v1/broken", headers: { authorization: `Bearer ${KEY}`, "x-request-id": "req-5xx" } })).statusCode).toBe(500);
    expect((await traced.inject({ method: "GET", url: "/v1/broken", headers: { "x-request-id": "req-401" } })).statusCode).toBe(401);
    expect((await traced.inject({ method: "GET", url: "/v1/nowhere/bob@example.com?token=x", headers: { "x-request-id": "req-404" } })).statusCode).toBe(404);
    const failed = await requestSpan("req-5xx");
    expect(failed.statusCode).toBe(2);
    expect(failed.attributes).toMatchObject({ "http.response.status_code": 500, "error.type": "500" });
    const refused = await requestSpan("req-401");
    expect(refused.statusCode).toBe(0);
    expect(refused.attributes["http.response.status_code"]).toBe(401);
    const unknown = await requestSpan("req-404");
    expect(unknown.name).toBe("GET");
    expect(unknown.attributes["http.route"]).toBeUndefined();
    expect(unknown.attributes["http.response.status_code"]).toBe(404);
  });

  it("ends the span of a request whose client went away, once, marked but not failed", async () => {
    if (!traced.server.listening) await traced.listen({ port: 0, host: "127.0.0.1" });
    const { port } = traced.server.address() as AddressInfo;
    await new Promise<void>((resolve) => {
      const req = http.request({ host: "127.0.0.1", port, path: "/v1/slow", headers: { authorization: `Bearer ${KEY}`, "x-request-id": "req-aborted" } });
      req.on("error", () => resolve());
      req.end();
      setTimeout(() => req.destroy(), 100);
    });
    const span = await requestSpan("req-aborted");
    expect(span.name).toBe("GET /v1/slow");
    expect(span.attributes["error.type"]).toBe("request_aborted");
    expect(span.statusCode).toBe(0);
    // The handler's late answer ends nothing twice: still one span after it would have come.
    await new Promise((r) => setTimeout(r, 500));
    await requestSpan("req-aborted");
  });

  it("leaves probes and scrapes untraced", async () => {
    expect((await traced.inject({ method: "GET", url: "/healthz", headers: { "x-request-id": "req-probe" } })).statusCode).toBe(200);
    expect((await post(traced, "req-after-probe")).statusCode).toBe(200);
    await requestSpan("req-after-probe");
    expect(receiver.spans.filter((s) => s.attributes["mailroom.request_id"] === "req-probe")).toEqual([]);
  });

  it("puts no address, query string or key in any span", async () => {
    await requestSpan("req-404");
    for (const span of receiver.spans) {
      const text = JSON.stringify([span.name, span.attributes]);
      expect(text).not.toMatch(/@|example\.com|s3cret|api_key|token=|\?|mr_test/);
    }
  });
});
