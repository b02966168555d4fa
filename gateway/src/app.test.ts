import { memoryTransport } from "@mailroom/kit/connect.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { loadConfig, createLogger } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { loadGatewaySettings } from "@mailroom/http/settings.js";
import { workspaceOf } from "./auth.js";
import { appError } from "@mailroom/kit/errors.js";
import { MemoryTokenBuckets } from "@mailroom/kit/token-bucket.js";

// An in-memory accounts unit that knows two keys: one with api_user, one without.
const accountsTransport = memoryTransport(({ service }) => {
  service(AccountsService, {
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
    const accounts = createClient(AccountsService, accountsTransport);
    const counted = new Proxy(accounts, {
      get(target, prop, receiver) {
        if (prop === "authenticate") authCalls++;
        return Reflect.get(target, prop, receiver);
      },
    });
    const deps: GatewayDeps = {
      config: loadConfig({}),
      errorDocsUrl: loadGatewaySettings(loadConfig({}), { MAILROOM_DOCS_URL: "https://docs.example.test/errors/" }).errorDocsUrl,
      logger: createLogger("gateway-test", "silent"),
      clients: { accounts: counted } as unknown as ServiceClients,
      rateLimitPerMinute: 5,
      authCacheMs: 60_000,
    };
    app = await buildGateway(deps, {
      api: [
        (scope) => scope.post("/v1/echo", async (request) => ({ workspaceId: workspaceOf(request), body: request.body })),
        (scope) => scope.get("/v1/items/:id", async (request) => ({ id: (request.params as { id: string }).id })),
        (scope) => scope.post("/v1/fails", async () => {
          throw appError({ code: "invalid_from", httpStatus: 400, message: "not verified", allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] });
        }),
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

  it("rejects missing, malformed, unknown and under-scoped keys with 401, each with docsUrl", async () => {
    for (const headers of [{} as Record<string, string>, { authorization: "Basic abc" }, { authorization: "Bearer mr_test_wrong_key" }, { authorization: "Bearer mr_test_readonly" }]) {
      const res = await post("/v1/echo", headers, "{}");
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({
        statusCode: 401, error: "Unauthorized", code: "unauthorized", message: expect.any(String), docsUrl: "https://docs.example.test/errors/unauthorized",
      });
    }
    // A key without the scope: the message says how to get a key that has it, in the key's workspace.
    const underScoped = await post("/v1/echo", { authorization: "Bearer mr_test_readonly" }, "{}");
    expect(underScoped.json().message).toBe(
      "Insufficient scope: this endpoint requires the api_user scope. A key with it: npx mailroom -w ws_a key create --scopes api_user",
    );
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

  it("refuses a NUL character in any string or key of a JSON body with 400 naming where (no store can keep one)", async () => {
    for (const [body, where] of [
      [{ idempotencyKey: "\u0000" }, "idempotencyKey"],
      [{ to: ["a@b.test", "c\u0000@d.test"] }, "to[1]"],
      [{ contact: { properties: { "pl\u0000an": "pro" } } }, "contact.properties.pl\u0000an"],
    ] as const) {
      const res = await post("/v1/echo", key, JSON.stringify(body));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: "invalid_json" });
      expect(res.json().message).toContain(`NUL character (\\u0000) at ${where}`);
    }
    // Escaped text that only looks like one is no NUL.
    expect((await post("/v1/echo", key, JSON.stringify({ text: "\\u0000" }))).statusCode).toBeLessThan(400);
  });

  it("answers router-level errors with the public body", async () => {
    const badEncoding = await app.inject({ method: "GET", url: "/v1/items/%E0%A4%A" });
    expect(badEncoding.statusCode).toBe(400);
    expect(badEncoding.json()).toMatchObject({ statusCode: 400, error: "Bad Request", code: "invalid_request" });
    const longParam = await app.inject({ method: "GET", url: `/v1/items/${"x".repeat(5000)}` });
    expect(longParam.statusCode).toBe(414);
    expect(longParam.json()).toMatchObject({ statusCode: 414, error: "URI Too Long", code: "uri_too_long" });
  });

  it("answers requests Node's HTTP parser refuses (a 20 KB URL) with the public body, not Node's", async () => {
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const res = await fetch(`${address}/v1/items/${"x".repeat(20_000)}`);
    expect(res.status).toBe(431);
    expect(await res.json()).toEqual({
      statusCode: 431, error: "Request Header Fields Too Large", code: "header_too_large", message: expect.any(String), docsUrl: "https://docs.example.test/errors/header_too_large",
    });
  });

  it("maps an ErrorInfo from a service to the spec's body with allowed lists and docsUrl", async () => {
    const res = await post("/v1/fails", key, "{}");
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400, error: "Bad Request", code: "invalid_from", message: expect.stringMatching(/^not verified\. To send from another address/),
      allowedEmails: ["a@x.test"], allowedDomains: ["x.test"], docsUrl: "https://docs.example.test/errors/invalid_from",
    });
    // The commands it suggests name the caller's workspace.
    expect(res.json().message).toContain("npx mailroom -w ws_a domain add <domain>");
    expect(res.json().message).not.toContain("<workspace-id>");
  });

  it("limits requests per key with 429 and RateLimit headers", async () => {
    let last;
    for (let i = 0; i < 8; i++) last = await post("/v1/echo", key, "{}");
    expect(last!.statusCode).toBe(429);
    expect(last!.headers["retry-after"]).toBeDefined();
    expect(last!.headers["ratelimit-limit"]).toBe("5");
    expect(last!.json()).toMatchObject({ statusCode: 429, error: "Too Many Requests", code: "rate_limited" });
  });

  it("accepts the Authorization scheme in any case", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const res = await post("/v1/echo", { authorization: `${scheme} mr_test_good_key` }, "{}");
      expect(res.statusCode, scheme).not.toBe(401);
    }
  });

  it("names every answer with x-request-id: the caller's own when acceptable, else a new one", async () => {
    const own = await post("/v1/echo", { ...key, "x-request-id": "trace:abc/123 def" }, "{}");
    expect(own.headers["x-request-id"]).toBe("trace:abc/123 def");
    for (const res of [
      await app.inject({ method: "GET", url: "/v1/nope" }),
      await post("/v1/echo", {}, "{}"),
      await post("/v1/echo", key, "{not json"),
      await app.inject({ method: "GET", url: "/v1/items/%E0%A4%A" }),
      await app.inject({ method: "GET", url: "/healthz" }),
    ]) {
      expect(res.headers["x-request-id"], res.body).toMatch(/^[0-9a-f-]{36}$/);
    }
    const longId = "x".repeat(128);
    expect((await app.inject({ method: "GET", url: "/healthz", headers: { "x-request-id": longId } })).headers["x-request-id"]).toBe(longId);
    for (const bad of ["x".repeat(129), "tab\there", "é", " padded"]) {
      const res = await app.inject({ method: "GET", url: "/healthz", headers: { "x-request-id": bad } });
      expect(res.headers["x-request-id"], bad).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe("gateway limits", () => {
  const accounts = (calls: { count: number }) => {
    const client = createClient(AccountsService, accountsTransport);
    return new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === "authenticate") calls.count++;
        return Reflect.get(target, prop, receiver);
      },
    });
  };
  const gateway = (calls: { count: number }, extra: Partial<GatewayDeps>) =>
    buildGateway({
      config: loadConfig({}),
      logger: createLogger("gateway-test", "silent"),
      clients: { accounts: accounts(calls) } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
      ...extra,
    }, { api: [(scope) => scope.post("/v1/echo", async () => ({ ok: true }))], public: [] });
  const echo = (app: FastifyInstance, apiKey: string, ip = "203.0.113.7") =>
    app.inject({ method: "POST", url: "/v1/echo", remoteAddress: ip, headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, payload: "{}" });

  it("stops a flood of bad keys from one address before it reaches the accounts unit", async () => {
    const calls = { count: 0 };
    const app = await gateway(calls, { authFailuresPerMinute: 20 });
    try {
      const answers: number[] = [];
      for (let i = 0; i < 60; i++) answers.push((await echo(app, `mr_test_guess_${i}_xxxxxxxx`)).statusCode);
      expect(calls.count).toBe(20);
      expect(answers.slice(0, 20).every((s) => s === 401)).toBe(true);
      expect(answers.slice(20).every((s) => s === 429)).toBe(true);
      const limited = await echo(app, "mr_test_guess_again");
      expect(limited.headers["retry-after"]).toBeDefined();
      expect(limited.json()).toMatchObject({ statusCode: 429, code: "rate_limited" });
      // A flood running in parallel is held to the same budget.
      const parallelCalls = { count: 0 };
      const fresh = await gateway(parallelCalls, { authFailuresPerMinute: 20 });
      await Promise.all(Array.from({ length: 50 }, (_, i) => echo(fresh, `mr_test_parallel_${i}_xxxxxx`, "203.0.113.8")));
      expect(parallelCalls.count).toBe(20);
      await fresh.close();
      // Another address, and valid keys, are not affected.
      expect((await echo(app, "mr_test_guess_other", "198.51.100.1")).statusCode).toBe(401);
      expect((await echo(app, "mr_test_good_key", "198.51.100.2")).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it("gives valid keys their attempts back", async () => {
    const calls = { count: 0 };
    const app = await gateway(calls, { authFailuresPerMinute: 3, authCacheMs: 0 });
    try {
      for (let i = 0; i < 10; i++) {
        expect((await echo(app, "mr_test_good_key")).statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 3)); // past the 1 ms cache
      }
      expect(calls.count).toBe(10);
    } finally {
      await app.close();
    }
  });

  it("is a token bucket per key: a burst, then the steady rate, with RateLimit headers", async () => {
    let now = 1_000_000;
    const calls = { count: 0 };
    const app = await gateway(calls, { rateLimitPerMinute: 60, rateLimitBurst: 3, rateLimitBuckets: new MemoryTokenBuckets(() => now) });
    try {
      const first = await echo(app, "mr_test_good_key");
      expect(first.headers).toMatchObject({ "ratelimit-limit": "3", "ratelimit-remaining": "2", "ratelimit-reset": "1" });
      expect((await echo(app, "mr_test_good_key")).statusCode).toBe(200);
      expect((await echo(app, "mr_test_good_key")).statusCode).toBe(200);
      const limited = await echo(app, "mr_test_good_key");
      expect(limited.statusCode).toBe(429);
      expect(limited.headers).toMatchObject({ "retry-after": "1", "ratelimit-remaining": "0" });
      // Another key has its own bucket.
      expect((await echo(app, "mr_test_readonly")).statusCode).toBe(401);
      now += 1_000; // one token a second
      expect((await echo(app, "mr_test_good_key")).statusCode).toBe(200);
      expect((await echo(app, "mr_test_good_key")).statusCode).toBe(429);
    } finally {
      await app.close();
    }
  });

  it("lets requests through, never a 500, when the shared buckets are unreachable", async () => {
    const calls = { count: 0 };
    const unreachable = { take: async () => Promise.reject(new Error("TIMEOUT")) };
    const app = await gateway(calls, { rateLimitPerMinute: 60, rateLimitBurst: 3, rateLimitBuckets: unreachable });
    try {
      for (let i = 0; i < 5; i++) expect((await echo(app, "mr_test_good_key")).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe("refusal bodies", () => {
  let refuse: FastifyInstance;
  beforeAll(async () => {
    refuse = await buildGateway({
      config: loadConfig({}),
      errorDocsUrl: "https://docs.example.test/errors",
      logger: createLogger("gateway-test", "silent"),
      clients: { accounts: createClient(AccountsService, accountsTransport) } as unknown as ServiceClients,
      rateLimitPerMinute: 10_000,
      authCacheMs: 60_000,
    }, {
      api: [
        (scope) => scope.post("/v1/refuse/:code", async (request) => {
          throw appError({ code: (request.params as { code: string }).code, httpStatus: 403, message: "Refused" });
        }),
      ],
      public: [],
    });
  });
  afterAll(async () => refuse?.close());
  const call = (url: string, payload = "{}") =>
    refuse.inject({ method: "POST", url, headers: { "content-type": "application/json", authorization: "Bearer mr_test_good_key" }, payload });

  it("names the setting or command that lifts a refusal, in the caller's workspace, and links every code's page", async () => {
    const lifts: Record<string, string> = {
      broadcast_api_not_enabled: "npx mailroom workspace update ws_a --enable broadcastEarlyAccess",
      broadcast_api_addon_required: "npx mailroom workspace update ws_a --enable emailApiAddon",
      broadcast_api_workspace_not_verified: "npx mailroom workspace update ws_a --enable verified",
      "campaigns/delivery_method_not_available": "npx mailroom workspace update ws_a --new-account false",
      monthly_limit_reached: "npx mailroom workspace update ws_a --limit",
      test_recipients_not_members: "npx mailroom -w ws_a member add <email>",
      "campaigns/invalid_from_email": "npx mailroom -w ws_a domain add <domain>",
      template_not_found: "POST /v1/templates",
      unknown_contact_property: "npx mailroom -w ws_a property create <slug> <type>",
    };
    for (const [code, command] of Object.entries(lifts)) {
      const res = await call(`/v1/refuse/${encodeURIComponent(code)}`);
      const body = res.json();
      expect(body.code, code).toBe(code);
      expect(body.message, code).toMatch(/^Refused\. /);
      expect(body.message, code).toContain(command);
      expect(body.docsUrl, code).toBe(`https://docs.example.test/errors/${code.replace("/", ".")}`);
    }
    // A code without a page of its own still links the index of every code.
    const unknown = await call("/v1/refuse/some_new_code");
    expect(unknown.json()).toMatchObject({ code: "some_new_code", message: "Refused", docsUrl: "https://docs.example.test/errors" });
    // So does every other refusal: a 404 route, malformed JSON.
    expect((await refuse.inject({ method: "GET", url: "/v1/nope" })).json().docsUrl).toBe("https://docs.example.test/errors/not_found");
    expect((await call("/v1/refuse/x", "{not json")).json().docsUrl).toBe("https://docs.example.test/errors/invalid_json");
  });
});
