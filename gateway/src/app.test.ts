import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, createRouterTransport, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { DirectoryService } from "../../gen/mailroom/directory/v1/directory_pb.js";
import { loadConfig, createLogger } from "../../services/kit/src/index.js";
import { buildGateway } from "./app.js";
import type { GatewayDeps, ServiceClients } from "./deps.js";
import { workspaceOf } from "./auth.js";
import { appError } from "../../services/kit/src/errors.js";
import { replyWithError } from "./errors.js";

// An in-memory directory that knows two keys: one with api_user, one without.
const directoryTransport = createRouterTransport(({ service }) => {
  service(DirectoryService, {
    authenticate(req) {
      if (req.apiKey === "mr_test_good_key") return { workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] };
      if (req.apiKey === "mr_test_readonly") return { workspaceId: "ws_a", keyId: "key_2", scopes: ["read_only"] };
      throw new ConnectError("unknown key", Code.Unauthenticated);
    },
  });
});

describe("gateway core", () => {
  let app: FastifyInstance;
  let authCalls = 0;
  beforeAll(async () => {
    const directory = createClient(DirectoryService, directoryTransport);
    const counted = new Proxy(directory, {
      get(target, prop, receiver) {
        if (prop === "authenticate") authCalls++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const deps: GatewayDeps = {
      config: loadConfig({}),
      logger: createLogger("gateway-test", "silent"),
      clients: { directory: counted } as unknown as ServiceClients,
      rateLimitPerMinute: 5,
      authCacheMs: 60_000,
    };
    app = await buildGateway(deps, {
      api: [
        (scope) => scope.post("/v1/echo", async (request) => ({ workspaceId: workspaceOf(request), body: request.body })),
        (scope) => scope.get("/v1/items/:id", async (request) => ({ id: (request.params as { id: string }).id })),
        (scope) => scope.post("/v1/fails", async (_request, reply) =>
          replyWithError(reply, appError({ code: "invalid_from", httpStatus: 400, message: "not verified", allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] }))),
      ],
      public: [],
    });
  });
  afterAll(async () => app?.close());

  const post = (url: string, headers: Record<string, string>, payload: string) =>
    app.inject({ method: "POST", url, headers: { "content-type": "application/json", ...headers }, payload });
  const key = { authorization: "Bearer mr_test_good_key" };

  it("answers an unknown route with 404 and the email error body", async () => {
    const res = await app.inject({ method: "GET", url: "/v1/nope" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ statusCode: 404, error: "Not Found" });
  });

  it("rejects missing, malformed, unknown and under-scoped keys with 401", async () => {
    for (const headers of [{} as Record<string, string>, { authorization: "Basic abc" }, { authorization: "Bearer mr_test_wrong_key" }, { authorization: "Bearer mr_test_readonly" }]) {
      const res = await post("/v1/echo", headers, "{}");
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ statusCode: 401, error: "Unauthorized", message: expect.any(String) });
    }
  });

  it("derives the workspace from the key and caches the lookup", async () => {
    const before = authCalls;
    const a = await post("/v1/echo", key, JSON.stringify({ x: 1 }));
    const b = await post("/v1/echo", key, JSON.stringify({ x: 2 }));
    expect(a.json()).toEqual({ workspaceId: "ws_a", body: { x: 1 } });
    expect(b.statusCode).toBe(200);
    expect(authCalls - before).toBeLessThanOrEqual(1);
  });

  it("turns malformed JSON, wrong content type and oversize bodies into 4xx", async () => {
    const bad = await post("/v1/echo", key, "{not json");
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ statusCode: 400, error: "Bad Request", code: "invalid_json" });
    const text = await app.inject({ method: "POST", url: "/v1/echo", headers: { ...key, "content-type": "text/plain" }, payload: "hi" });
    expect(text.statusCode).toBe(415);
    const big = await post("/v1/echo", key, JSON.stringify({ html: "x".repeat(3 * 1024 * 1024) }));
    expect(big.statusCode).toBe(413);
  });

  it("answers router-level errors with the public body", async () => {
    const badEncoding = await app.inject({ method: "GET", url: "/v1/items/%E0%A4%A" });
    expect(badEncoding.statusCode).toBe(400);
    expect(badEncoding.json()).toMatchObject({ statusCode: 400, error: "Bad Request", code: "invalid_request" });
    const longParam = await app.inject({ method: "GET", url: `/v1/items/${"x".repeat(5000)}` });
    expect(longParam.statusCode).toBe(414);
    expect(longParam.json()).toMatchObject({ statusCode: 414, error: "URI Too Long", code: "uri_too_long" });
  });

  it("maps an ErrorInfo from a service to the spec's body with allowed lists and docsUrl", async () => {
    const res = await post("/v1/fails", key, "{}");
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400, error: "Bad Request", message: "not verified",
      allowedEmails: ["a@x.test"], allowedDomains: ["x.test"], docsUrl: expect.stringMatching(/^https:\/\//),
    });
  });

  it("limits requests per key with 429 and RateLimit headers", async () => {
    let last;
    for (let i = 0; i < 8; i++) last = await post("/v1/echo", key, "{}");
    expect(last!.statusCode).toBe(429);
    expect(last!.headers["retry-after"]).toBeDefined();
    expect(last!.headers["ratelimit-limit"]).toBe("5");
    expect(last!.json()).toMatchObject({ statusCode: 429, error: "Too Many Requests", code: "rate_limited" });
  });
});
