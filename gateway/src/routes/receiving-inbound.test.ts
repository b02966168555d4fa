import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { ReceivingService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { receivingRoutes } from "../../../services/inbound/src/receiving-routes.js";
import { mime, testReceiving } from "../../../services/inbound/src/receiving-testing.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";

/**
 * The receiving API over the inbound unit's own ReceivingService (its use cases on the
 * in-memory store, in memory): a domain and a rule made through the gateway take a message,
 * which the gateway then lists, reads and downloads byte for byte, and which another
 * workspace's key cannot reach. The contract both sides build on, checked once across both.
 */
const KEYS = { a: "mr_test_rcv_inbound_a", b: "mr_test_rcv_inbound_b" } as const;
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const accounts = {
  async authenticate({ apiKey }: { apiKey: string }) {
    if (apiKey === KEYS.a) return { workspaceId: "ws_in_a", keyId: "key_a", scopes: ["api_user", "api_read"], role: "EDITOR", memberId: "" };
    if (apiKey === KEYS.b) return { workspaceId: "ws_in_b", keyId: "key_b", scopes: ["api_user", "api_read"], role: "EDITOR", memberId: "" };
    throw new ConnectError("unknown key", Code.Unauthenticated);
  },
};

describe("gateway: receiving email over the inbound unit's ReceivingService", () => {
  let app: FastifyInstance;
  let t: Awaited<ReturnType<typeof testReceiving>>;
  const pdf = randomBytes(150_000);
  const call = (method: "GET" | "POST" | "DELETE", url: string, body?: unknown, key: string = KEYS.a) =>
    app.inject({ method, url, headers: { ...auth(key), ...(body ? { "content-type": "application/json" } : {}) }, payload: body ? JSON.stringify(body) : undefined });

  beforeAll(async () => {
    t = await testReceiving();
    app = await buildGateway({
      config: loadConfig({}),
      logger: createLogger("gateway-receiving-inbound-test", "silent"),
      clients: { accounts, receiving: createClient(ReceivingService, memoryTransport(receivingRoutes({ config: t.config, receiver: t.receiver }))) } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    });
  });
  afterAll(async () => app?.close());

  it("takes mail for a domain and rule made through the API, and serves it to its workspace only", async () => {
    t.mx.zone.set("in.acme.test", ["mx.mailroom.test"]);
    // Not (under) a verified sending domain of the workspace: refused, naming what to do.
    const refused = await call("POST", "/v1/inbound/domains", { domain: "In.Acme.test" });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: "domain_not_verified" });
    t.sendingDomains.allow("ws_in_a", "acme.test");
    const created = await call("POST", "/v1/inbound/domains", { domain: "In.Acme.test" });
    expect(created.statusCode, created.body).toBe(201);
    const domain = created.json().domain;
    expect(domain).toMatchObject({ domain: "in.acme.test", mx: { host: "mx.mailroom.test", priority: 10 } });
    const verified = await call("POST", `/v1/inbound/domains/${domain.id}/verify`);
    expect(verified.json().domain.status).toBe("verified");
    const rule = await call("POST", `/v1/inbound/domains/${domain.id}/rules`, { match: "support", action: "store" });
    expect(rule.statusCode, rule.body).toBe(201);

    const raw = mime({ from: "Bob <bob@example.test>", to: "support@in.acme.test", subject: "Invoice", text: "See attached", attachment: { filename: "invoice.pdf", contentType: "application/pdf", content: pdf } });
    await t.inbound.receive({ mailFrom: "bob@example.test", rcptTo: ["support@in.acme.test"] }, new TextEncoder().encode(raw));

    const list = await call("GET", "/v1/received-emails?to=support@in.acme.test");
    expect(list.statusCode, list.body).toBe(200);
    const [item] = list.json().receivedEmails.items;
    expect(item).toMatchObject({ from: "bob@example.test", fromName: "Bob", subject: "Invoice", attachments: [{ filename: "invoice.pdf", contentType: "application/pdf", size: pdf.byteLength }] });
    expect(item.id).toMatch(/^rcv_/);

    const detail = await call("GET", `/v1/received-emails/${item.id}`);
    expect(detail.json().receivedEmail.text).toContain("See attached");
    const file = await call("GET", `/v1/received-emails/${item.id}/attachments/${item.attachments[0].id}`);
    expect(file.statusCode).toBe(200);
    expect(file.rawPayload.equals(pdf)).toBe(true);
    expect(file.headers["content-length"]).toBe(String(pdf.byteLength));
    expect(file.headers["content-disposition"]).toMatch(/^attachment; filename="invoice\.pdf"/);
    const eml = await call("GET", `/v1/received-emails/${item.id}/raw`);
    expect(eml.headers["content-type"]).toBe("message/rfc822");
    expect(eml.body).toBe(raw);

    // Workspace B sees nothing of A's.
    expect((await call("GET", "/v1/received-emails", undefined, KEYS.b)).json().receivedEmails.items).toEqual([]);
    for (const url of [`/v1/received-emails/${item.id}`, `/v1/received-emails/${item.id}/raw`, `/v1/received-emails/${item.id}/attachments/${item.attachments[0].id}`, `/v1/inbound/domains/${domain.id}`, `/v1/inbound/domains/${domain.id}/rules`]) {
      const res = await call("GET", url, undefined, KEYS.b);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"], url).toMatch(/^application\/json/);
    }
    expect((await call("DELETE", `/v1/inbound/domains/${domain.id}`, undefined, KEYS.b)).statusCode).toBe(404);
    // A missing attachment of A's own email is a 404 too (the unit's refusal inside the stream).
    expect((await call("GET", `/v1/received-emails/${item.id}/attachments/att_99`)).json().code).toMatch(/not_found$/);
  });
});
