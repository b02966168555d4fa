import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { startConnectServer, type ConnectServer } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import { createServiceClients, rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "./auth.js";
import { requestIdOf } from "./request-context.js";

describe("x-request-id on internal RPCs", () => {
  let services: ConnectServer;
  let app: FastifyInstance;
  const seen: Array<{ rpc: string; requestId: string | null }> = [];

  beforeAll(async () => {
    // The accounts and audience units' services on one server (both URLs point at it).
    services = await startConnectServer({
      logger: createLogger("accounts-audience-test", "silent"),
      routes: ({ service }) => {
        service(AccountsService, {
          authenticate(req, ctx) {
            seen.push({ rpc: "authenticate", requestId: ctx.requestHeader.get("x-request-id") });
            if (!req.apiKey.startsWith("mr_test_good")) throw new ConnectError("unknown key", Code.Unauthenticated);
            return { workspaceId: "ws_a", keyId: req.apiKey, scopes: ["api_user"] };
          },
        });
        service(ContactService, {
          getContact(_req, ctx) {
            seen.push({ rpc: "getContact", requestId: ctx.requestHeader.get("x-request-id") });
            throw new ConnectError("no such contact", Code.NotFound);
          },
        });
      },
    });
    const config = loadConfig({ MAILROOM_ACCOUNTS_URL: services.url, MAILROOM_AUDIENCE_URL: services.url });
    const clients = createServiceClients(config);
    app = await buildGateway({ config, logger: createLogger("gateway-test", "silent"), clients, rateLimitPerMinute: 0, authCacheMs: 0 }, {
      api: [
        (scope) =>
          scope.post("/v1/lookup", async (request) => {
            // Routes name the request in every call (the clients' type requires it).
            await clients.contacts.getContact({ workspaceId: workspaceOf(request), email: "a@b.test" }, rpcOptions(request)).catch(() => undefined);
            return { ok: true };
          }),
      ],
      public: [],
    });
  });
  afterAll(async () => {
    await app?.close();
    await services?.close();
  });

  it("passes the caller's id, or the generated one, to every service call made for the request", async () => {
    seen.length = 0;
    const own = await app.inject({ method: "POST", url: "/v1/lookup", headers: { authorization: "Bearer mr_test_good_1", "x-request-id": "caller-id-1", "content-type": "application/json" }, payload: "{}" });
    expect(own.statusCode).toBe(200);
    expect(own.headers["x-request-id"]).toBe("caller-id-1");
    expect(seen).toEqual([{ rpc: "authenticate", requestId: "caller-id-1" }, { rpc: "getContact", requestId: "caller-id-1" }]);

    seen.length = 0;
    const generated = await app.inject({ method: "POST", url: "/v1/lookup", headers: { authorization: "Bearer mr_test_good_2", "content-type": "application/json" }, payload: "{}" });
    const id = generated.headers["x-request-id"];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen.map((s) => s.requestId)).toEqual([id, id]);

    // Concurrent requests keep their own ids.
    seen.length = 0;
    await Promise.all(["c-1", "c-2", "c-3"].map((rid, i) =>
      app.inject({ method: "POST", url: "/v1/lookup", headers: { authorization: `Bearer mr_test_good_c${i}`, "x-request-id": rid, "content-type": "application/json" }, payload: "{}" })));
    expect(seen.filter((s) => s.rpc === "getContact").map((s) => s.requestId).sort()).toEqual(["c-1", "c-2", "c-3"]);
  });

  it("names an error answer too", async () => {
    seen.length = 0;
    const refused = await app.inject({ method: "POST", url: "/v1/lookup", headers: { authorization: "Bearer mr_test_bad_key_1", "x-request-id": "caller-id-2" } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers["x-request-id"]).toBe("caller-id-2");
    expect(seen).toEqual([{ rpc: "authenticate", requestId: "caller-id-2" }]);
  });

  it("accepts printable ids up to 128 characters and replaces others", () => {
    expect(requestIdOf("abc-123_x.y:z/w=1 2")).toBe("abc-123_x.y:z/w=1 2");
    expect(requestIdOf("x".repeat(128))).toBe("x".repeat(128));
    for (const bad of ["x".repeat(129), "", " lead", "trail ", "new\nline", "ü", ["a", "b"], undefined]) {
      expect(requestIdOf(bad as string | undefined)).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
