import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { appError } from "@mailroom/kit/errors.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import type { GetDmarcSummaryRequest } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";

/**
 * GET /v1/domains/:id/dmarc over an accounts unit and an inbound unit answering in memory: the
 * domain is looked up in the caller's workspace first (another workspace's is a 404, and the
 * inbound unit is never asked), then the summary comes back in camelCase with plain numbers.
 */
const KEYS: Record<string, { workspaceId: string; scopes: string[]; role: string }> = {
  mr_test_dmarc_acme: { workspaceId: "ws_acme", scopes: ["api_user", "api_read"], role: "EDITOR" },
  mr_test_dmarc_viewer: { workspaceId: "ws_acme", scopes: ["api_read"], role: "VIEWER" },
  mr_test_dmarc_other: { workspaceId: "ws_other", scopes: ["api_user", "api_read"], role: "EDITOR" },
};
const DOMAINS: Record<string, Record<string, boolean>> = { ws_acme: { "acme.example": true, "pending.example": false }, ws_other: { "other.example": true } };

const asked: GetDmarcSummaryRequest[] = [];
const clients = {
  accounts: {
    async authenticate({ apiKey }: { apiKey: string }) {
      const key = KEYS[apiKey];
      if (!key) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { ...key, keyId: `key_${apiKey}`, memberId: "" };
    },
    async getDomain({ workspaceId, domain }: { workspaceId: string; domain: string }) {
      const name = domain.toLowerCase();
      if (!/^[a-z0-9.-]+\.[a-z]{2,}$/.test(name)) throw appError({ code: "invalid_domain", httpStatus: 400, message: `"${domain}" is not a valid domain name` });
      const verified = DOMAINS[workspaceId]?.[name];
      if (verified === undefined) throw appError({ code: "domain_not_found", httpStatus: 404, message: `Domain ${name} not found` });
      return { domain: { domain: name, verified, records: [] } };
    },
  },
  receiving: {
    async getDmarcSummary(req: GetDmarcSummaryRequest) {
      asked.push(req);
      return {
        sources: [
          { sourceIp: "192.0.2.10", messages: 161n, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, dispositionNone: 161n, dispositionQuarantine: 0n, dispositionReject: 0n, failingAlignment: false },
          { sourceIp: "2001:db8::25", messages: 8n, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, dispositionNone: 0n, dispositionQuarantine: 0n, dispositionReject: 8n, failingAlignment: true },
        ],
        days: [{ day: "2026-11-21", messages: 48n, spfAlignedPassRate: 40 / 48, dkimAlignedPassRate: 40 / 48, dmarcPassRate: 40 / 48, dispositionNone: 40n, dispositionQuarantine: 0n, dispositionReject: 8n }],
        reports: 2,
        reporters: ["Enterprise Outlook", "google.com"],
        rua: "mailto:dmarc@mx.mailroom.example",
      };
    },
  },
};

describe("GET /v1/domains/:id/dmarc", () => {
  let app: FastifyInstance;
  let api: DocumentedCalls;
  beforeAll(async () => {
    app = await buildGateway({
      config: { ...loadConfig({}), secret: "dmarc-gateway-secret-0123456789" },
      logger: createLogger("gateway-dmarc-test", "silent"),
      clients: clients as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    });
    api = await documentedCalls(app, { authorization: "Bearer mr_test_dmarc_acme" });
  });
  afterAll(async () => app?.close());

  it("answers the inbound unit's summary for the workspace's domain, since the time asked", async () => {
    asked.length = 0;
    const res = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/ACME.example/dmarc?since=2026-11-01T00:00:00%2B01:00", undefined, { authorization: "Bearer mr_test_dmarc_viewer" });
    expect(res.statusCode).toBe(200);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ workspaceId: "ws_acme", domain: "acme.example" });
    expect(timestampDate(asked[0].since!).toISOString()).toBe("2026-10-31T23:00:00.000Z");
    expect(res.data).toEqual({
      domain: "acme.example",
      since: "2026-10-31T23:00:00.000Z",
      reports: 2,
      reporters: ["Enterprise Outlook", "google.com"],
      rua: "mailto:dmarc@mx.mailroom.example",
      sources: [
        { sourceIp: "192.0.2.10", messages: 161, spfAlignedPassRate: 1, dkimAlignedPassRate: 1, dmarcPassRate: 1, disposition: { none: 161, quarantine: 0, reject: 0 }, failingAlignment: false },
        { sourceIp: "2001:db8::25", messages: 8, spfAlignedPassRate: 0, dkimAlignedPassRate: 0, dmarcPassRate: 0, disposition: { none: 0, quarantine: 0, reject: 8 }, failingAlignment: true },
      ],
      days: [{ day: "2026-11-21", messages: 48, spfAlignedPassRate: 40 / 48, dkimAlignedPassRate: 40 / 48, dmarcPassRate: 40 / 48, disposition: { none: 40, quarantine: 0, reject: 8 } }],
    });
  });

  it("asks for the last 30 days when no since is given", async () => {
    asked.length = 0;
    const before = Date.now();
    const res = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/acme.example/dmarc");
    expect(res.statusCode).toBe(200);
    const since = timestampDate(asked[0].since!).getTime();
    expect(since).toBeGreaterThanOrEqual(before - 30 * 86_400_000 - 1000);
    expect(since).toBeLessThanOrEqual(Date.now() - 30 * 86_400_000 + 1000);
    expect(res.data.since).toBe(new Date(since).toISOString());
  });

  it("is a 404 for another workspace's domain and a 409 for one not verified; the inbound unit is not asked", async () => {
    asked.length = 0;
    const other = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/other.example/dmarc");
    expect([other.statusCode, other.data.code]).toEqual([404, "domain_not_found"]);
    const mine = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/acme.example/dmarc", undefined, { authorization: "Bearer mr_test_dmarc_other" });
    expect([mine.statusCode, mine.data.code]).toEqual([404, "domain_not_found"]);
    const pending = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/pending.example/dmarc");
    expect([pending.statusCode, pending.data.code]).toEqual([409, "domain_not_verified"]);
    expect(asked).toEqual([]);
  });

  it("is a 400 for a bad since or an unknown parameter, a 404 for a name that is no domain", async () => {
    asked.length = 0;
    for (const url of ["/v1/domains/acme.example/dmarc?since=yesterday", "/v1/domains/acme.example/dmarc?since=2026-13-01T00:00:00Z", "/v1/domains/acme.example/dmarc?until=2026-11-01T00:00:00Z"]) {
      const res = await api.call("GET /v1/domains/{id}/dmarc", url);
      expect([url, res.statusCode, res.data.code]).toEqual([url, 400, "invalid_request"]);
    }
    const bad = await api.call("GET /v1/domains/{id}/dmarc", "/v1/domains/not_a_domain/dmarc");
    expect([bad.statusCode, bad.data.code]).toEqual([404, "domain_not_found"]);
    expect(asked).toEqual([]);
  });

  it("drives every documented response of its own", () => {
    expect(api.undriven((p) => p === "/v1/domains/{id}/dmarc")).toEqual([]);
  });
});
