import http from "node:http";
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";
import { FakeReceiving, FAKE_MX_HOST } from "./receiving-fake.testing.js";

/**
 * Receiving email's public API (DESIGN §10.4) over a stand-in ReceivingService in memory:
 * inbound domains and rules (checked before the inbound unit is asked: a clear 400), received
 * emails listed, read and downloaded (streamed byte for byte with the download headers), the
 * contract's error codes answered with their statuses, never a 500 for what a client sends,
 * and every call naming the key's workspace, never one from the request. Every documented
 * response is driven and checked against the OpenAPI document.
 */
const KEYS = { a: "mr_test_receiving_a", viewer: "mr_test_receiving_viewer", b: "mr_test_receiving_b" } as const;
const WS = { a: "ws_rcv_a", b: "ws_rcv_b" };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

const accounts = {
  async authenticate({ apiKey }: { apiKey: string }) {
    if (apiKey === KEYS.a) return { workspaceId: WS.a, keyId: "key_a", scopes: ["api_user", "api_read"], role: "EDITOR", memberId: "" };
    if (apiKey === KEYS.viewer) return { workspaceId: WS.a, keyId: "key_viewer", scopes: ["api_read"], role: "VIEWER", memberId: "" };
    if (apiKey === KEYS.b) return { workspaceId: WS.b, keyId: "key_b", scopes: ["api_user", "api_read"], role: "EDITOR", memberId: "" };
    throw new ConnectError("unknown key", Code.Unauthenticated);
  },
};

const REPORT = randomBytes(300 * 1024 + 17);
const RAW = Buffer.from("From: Ann <ann@example.test>\r\nTo: support@in.acme.test\r\nSubject: Help\r\n\r\nHello\r\n".repeat(3000));
const TRICKY_NAME = 'Q3 "final"\\é (1).pdf';

describe("gateway: receiving email", () => {
  let app: FastifyInstance;
  let fake: FakeReceiving;
  let api: DocumentedCalls;

  beforeAll(async () => {
    fake = new FakeReceiving();
    app = await buildGateway({
      config: loadConfig({}),
      logger: createLogger("gateway-receiving-test", "silent"),
      clients: { accounts, receiving: fake.client() } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    });
    api = await documentedCalls(app, auth(KEYS.a));
    fake.plant({
      id: "rcv_1", workspaceId: WS.a, subject: "Re: your invoice", envelopeTo: ["support@in.acme.test"],
      from: { address: "Bob@Example.test", name: "Bob" }, to: [{ address: "support@in.acme.test", name: "" }], cc: [{ address: "cc@example.test", name: "" }],
      inReplyTo: { emailId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye", broadcastId: "", contactId: "ct_1" }, inReplyToHeader: "abc@acme.test", references: ["abc@acme.test"],
      mailboxHash: "", spamScore: 1.5, size: BigInt(RAW.byteLength), ruleId: "inr_9", action: "webhook",
      receivedAt: timestampFromDate(new Date("2030-01-02T00:00:00Z")),
      text: "Thanks!\n\n> earlier", html: "<p>Thanks!</p>", strippedTextReply: "Thanks!",
      headers: [{ $typeName: "mailroom.inbound.v1.ReceivedHeader", name: "Subject", value: "Re: your invoice" }],
      attachments: [
        { id: "att_1", filename: TRICKY_NAME, contentType: "application/pdf", bytes: REPORT },
        { id: "att_2", filename: "page.html", contentType: "text/html; charset=utf-8", bytes: Buffer.from("<script>alert(1)</script>") },
        { id: "att_3", filename: "odd.bin", contentType: "not a type\r\nX-Evil: 1", bytes: Buffer.from("odd") },
      ],
      raw: RAW,
    });
    fake.plant({ id: "rcv_2", workspaceId: WS.a, subject: "Older", envelopeTo: ["reply+t1@in.acme.test"], mailboxHash: "t1", receivedAt: timestampFromDate(new Date("2029-12-01T00:00:00Z")) });
    fake.plant({ id: "rcv_3", workspaceId: WS.a, subject: "Oldest", envelopeTo: ["sales@in.acme.test"], receivedAt: timestampFromDate(new Date("2029-11-01T00:00:00Z")) });
    fake.plant({ id: "rcv_other", workspaceId: WS.b, subject: "B's secret", envelopeTo: ["x@in.b.test"], attachments: [{ id: "att_1", bytes: Buffer.from("secret") }], raw: Buffer.from("secret") });
  });
  afterAll(async () => app?.close());
  beforeEach(() => {
    fake.calls.length = 0;
  });
  afterEach(() => {
    fake.down = false;
  });

  /** Every call the gateway made named the key's workspace. */
  const onlyWorkspace = (ws: string) => expect(new Set(fake.calls.map((c) => c.workspaceId))).toEqual(new Set([ws]));

  describe("inbound domains", () => {
    it("adds a domain (normalised) with its MX record, lists, reads, verifies and deletes it: always in the key's workspace", async () => {
      const created = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "  In.Acme.TEST. " });
      expect(created.statusCode).toBe(201);
      expect(created.data.domain).toMatchObject({ domain: "in.acme.test", status: "pending", mx: { name: "in.acme.test", host: FAKE_MX_HOST, priority: 10 } });
      expect(fake.calls[0]!.request).toMatchObject({ domain: "in.acme.test" });
      const id = created.data.domain.id as string;
      expect(id).toMatch(/^ind_/);

      expect((await api.call("GET /v1/inbound/domains", "/v1/inbound/domains")).data.domains.map((d: { id: string }) => d.id)).toEqual([id]);
      expect((await api.call("GET /v1/inbound/domains/{id}", `/v1/inbound/domains/${id}`)).data.domain.id).toBe(id);
      const unverified = await api.call("POST /v1/inbound/domains/{id}/verify", `/v1/inbound/domains/${id}/verify`);
      expect(unverified.data.domain).toMatchObject({ status: "pending", failure: "no MX record" });
      fake.published.add("in.acme.test");
      const verified = await api.call("POST /v1/inbound/domains/{id}/verify", `/v1/inbound/domains/${id}/verify`);
      expect(verified.data.domain).toMatchObject({ status: "verified", verifiedAt: "2030-01-02T00:00:00.000Z" });
      expect(verified.data.domain.failure).toBeUndefined();
      onlyWorkspace(WS.a);

      // Another workspace sees none of it, and cannot touch it.
      fake.calls.length = 0;
      expect((await api.call("GET /v1/inbound/domains", "/v1/inbound/domains", undefined, auth(KEYS.b))).data.domains).toEqual([]);
      expect((await api.call("GET /v1/inbound/domains/{id}", `/v1/inbound/domains/${id}`, undefined, auth(KEYS.b))).data.code).toBe("inbound_domain_not_found");
      expect((await api.call("DELETE /v1/inbound/domains/{id}", `/v1/inbound/domains/${id}`, undefined, auth(KEYS.b))).statusCode).toBe(404);
      expect((await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "in.acme.test" }, auth(KEYS.b))).data.code).toBe("inbound_domain_taken");
      onlyWorkspace(WS.b);

      const deleted = await api.call("DELETE /v1/inbound/domains/{id}", `/v1/inbound/domains/${id}`);
      expect(deleted.data).toEqual({ id, isDeleted: true });
      expect(fake.domains).toEqual([]);
    });

    it("refuses what is no domain name with a 400 naming the field, a second add with a 409, a workspace in the body with a 400", async () => {
      for (const domain of ["", "localhost", "http://acme.test", "ann@acme.test", "-bad.acme.test", "acme.123", "a".repeat(64) + ".test"]) {
        const res = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain });
        expect(res.statusCode, domain).toBe(400);
        expect(res.data.message, domain).toMatch(/^domain: must be a domain name such as in\.acme\.com/);
      }
      expect((await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: 42 })).statusCode).toBe(400);
      expect((await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", "{not json")).data.code).toBe("invalid_json");
      // The workspace is the key's: a request naming one is refused, not obeyed.
      const smuggled = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "in.x.test", workspaceId: WS.b });
      expect(smuggled.statusCode).toBe(400);
      expect(smuggled.data.message).toMatch(/workspaceId/);
      expect(fake.calls).toEqual([]);

      // An IDN is stored as punycode, as the inbound unit stores it.
      const idn = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "Bücher.example" });
      expect(idn.data.domain.domain).toBe("xn--bcher-kva.example");
      const again = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "xn--bcher-kva.example" });
      expect(again.statusCode).toBe(409);
      expect(again.data.code).toBe("inbound_domain_exists");
      await api.call("DELETE /v1/inbound/domains/{id}", `/v1/inbound/domains/${idn.data.domain.id}`);
    });

    it("answers ids that cannot exist with the same 404 as missing ones, without asking the unit", async () => {
      for (const id of ["nope", "rcv_1", "ind_", "ind_a%2Fb", "ind_" + "x".repeat(90)]) {
        const res = await api.call("GET /v1/inbound/domains/{id}", `/v1/inbound/domains/${id}`);
        expect([res.statusCode, res.data.code], id).toEqual([404, "inbound_domain_not_found"]);
      }
      expect(fake.calls).toEqual([]);
      const missing = await api.call("POST /v1/inbound/domains/{id}/verify", "/v1/inbound/domains/ind_404/verify");
      expect([missing.statusCode, missing.data.code]).toEqual([404, "inbound_domain_not_found"]);
    });

    it("lets an api_read key list and read, and refuses it changes", async () => {
      expect((await api.call("GET /v1/inbound/domains", "/v1/inbound/domains", undefined, auth(KEYS.viewer))).statusCode).toBe(200);
      const refused = await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "in.v.test" }, auth(KEYS.viewer));
      expect([refused.statusCode, refused.data.code]).toEqual([401, "unauthorized"]);
      expect(refused.data.message).toMatch(/api_user/);
      expect((await api.call("GET /v1/received-emails", "/v1/received-emails", undefined, auth(KEYS.viewer))).statusCode).toBe(401);
    });

    it("answers 503 while the inbound unit is down", async () => {
      fake.down = true;
      const res = await api.call("GET /v1/inbound/domains", "/v1/inbound/domains");
      expect([res.statusCode, res.data.code]).toEqual([503, "service_unavailable"]);
    });
  });

  describe("rules", () => {
    let domainId = "";
    beforeAll(async () => {
      domainId = (await api.call("POST /v1/inbound/domains", "/v1/inbound/domains", { domain: "rules.acme.test" })).data.domain.id;
    });

    it("adds, lists and deletes rules; a plus-address match is kept lower-case; a forward carries its address", async () => {
      const plus = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "Reply+*", action: "webhook" });
      expect(plus.statusCode).toBe(201);
      expect(plus.data.rule).toMatchObject({ match: "reply+*", action: "webhook", domainId });
      expect(plus.data.rule.forwardTo).toBeUndefined();
      const forward = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "billing+stripe", action: "forward", forwardTo: " team@example.test " });
      expect(forward.data.rule).toMatchObject({ match: "billing+stripe", action: "forward", forwardTo: "team@example.test" });
      const all = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "*", action: "store" });
      expect(all.data.rule.match).toBe("*");

      const listed = await api.call("GET /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`);
      expect(listed.data.rules.map((r: { match: string }) => r.match)).toEqual(["reply+*", "billing+stripe", "*"]);
      const dup = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "*", action: "webhook" });
      expect([dup.statusCode, dup.data.code]).toEqual([409, "inbound_rule_exists"]);

      const gone = await api.call("DELETE /v1/inbound/domains/{id}/rules/{ruleId}", `/v1/inbound/domains/${domainId}/rules/${plus.data.rule.id}`);
      expect(gone.data).toEqual({ id: plus.data.rule.id, isDeleted: true });
      const again = await api.call("DELETE /v1/inbound/domains/{id}/rules/{ruleId}", `/v1/inbound/domains/${domainId}/rules/${plus.data.rule.id}`);
      expect([again.statusCode, again.data.code]).toEqual([404, "inbound_rule_not_found"]);
      expect((await api.call("DELETE /v1/inbound/domains/{id}/rules/{ruleId}", `/v1/inbound/domains/${domainId}/rules/bogus`)).data.code).toBe("inbound_rule_not_found");
      onlyWorkspace(WS.a);

      // Another workspace reaches neither the domain's rules nor their deletion.
      const foreign = await api.call("GET /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, undefined, auth(KEYS.b));
      expect([foreign.statusCode, foreign.data.code]).toEqual([404, "inbound_domain_not_found"]);
      expect((await api.call("DELETE /v1/inbound/domains/{id}/rules/{ruleId}", `/v1/inbound/domains/${domainId}/rules/${all.data.rule.id}`, undefined, auth(KEYS.b))).statusCode).toBe(404);
      expect((await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "x", action: "store" }, auth(KEYS.b))).statusCode).toBe(404);
      expect(fake.rules.filter((r) => r.domainId === domainId)).toHaveLength(2);
    });

    it("refuses a bad match, action or forward address with a 400 that names the field, before asking the unit", async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{ match: "sup*port", action: "store" }, /^match: must be "\*" \(any address\), a local part/],
        [{ match: "a+b+*", action: "store" }, /^match: /],
        [{ match: "", action: "store" }, /^match: /],
        [{ match: "ann@acme.test", action: "store" }, /^match: /],
        [{ match: "x".repeat(65), action: "store" }, /^match: /],
        [{ match: "support", action: "bounce" }, /^action: action must be one of webhook, forward, store/],
        [{ match: "support", action: "forward" }, /^forwardTo: is required when action is forward/],
        [{ match: "support", action: "forward", forwardTo: "   " }, /^forwardTo: is required when action is forward/],
        [{ match: "support", action: "forward", forwardTo: "not an address" }, /^forwardTo: must be an email address/],
        [{ match: "support", action: "forward", forwardTo: "a@b.test\r\nBcc: x@evil.test" }, /^forwardTo: must be an email address/],
        [{ match: "support", action: "store", forwardTo: "team@example.test" }, /^forwardTo: is only for action forward \(this rule's action is store\)/],
        [{ match: "support", action: "webhook", extra: 1 }, /extra/],
        [{ action: "webhook" }, /^match: /],
      ];
      for (const [body, message] of cases) {
        const res = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, body);
        expect([res.statusCode, res.data.code], JSON.stringify(body)).toEqual([400, "invalid_request"]);
        expect(res.data.message, JSON.stringify(body)).toMatch(message);
      }
      expect(fake.calls).toEqual([]);
    });

    it("answers a refusal of the unit (a forward back into an inbound domain) with its code and status", async () => {
      const res = await api.call("POST /v1/inbound/domains/{id}/rules", `/v1/inbound/domains/${domainId}/rules`, { match: "loop", action: "forward", forwardTo: "x@rules.acme.test" });
      expect([res.statusCode, res.data.code]).toEqual([400, "invalid_inbound_rule"]);
      expect(res.data.message).toMatch(/come back here/);
      expect(res.data.docsUrl).toMatch(/\/docs\/errors\/invalid_inbound_rule$/);
    });
  });

  describe("received emails", () => {
    it("lists newest first in the list envelope, without bodies; pages with the cursor", async () => {
      const first = await api.call("GET /v1/received-emails", "/v1/received-emails?limit=2");
      expect(first.data.receivedEmails.items.map((e: { id: string }) => e.id)).toEqual(["rcv_1", "rcv_2"]);
      expect(first.data.receivedEmails.hasMore).toBe(true);
      const item = first.data.receivedEmails.items[0];
      expect(item).toMatchObject({
        from: "Bob@Example.test", fromName: "Bob", to: ["support@in.acme.test"], cc: ["cc@example.test"],
        inReplyTo: { emailId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye", contactId: "ct_1" }, spamScore: 1.5, receivedAt: "2030-01-02T00:00:00.000Z",
        attachments: [{ id: "att_1", filename: TRICKY_NAME, contentType: "application/pdf", size: REPORT.byteLength, inline: false }, { id: "att_2" }, { id: "att_3" }],
      });
      expect(item.inReplyTo.broadcastId).toBeUndefined();
      expect(item.text).toBeUndefined();
      expect(first.data.receivedEmails.items[1]).toMatchObject({ mailboxHash: "t1" });
      expect(first.data.receivedEmails.items[1].spamScore).toBeUndefined();
      expect(first.data.receivedEmails.items[1].fromName).toBe("Ann");
      const next = await api.call("GET /v1/received-emails", `/v1/received-emails?limit=2&cursor=${first.data.receivedEmails.cursor}`);
      expect(next.data.receivedEmails).toMatchObject({ items: [{ id: "rcv_3" }], cursor: null, hasMore: false });
      expect(fake.calls.map((c) => (c.request as { limit: number }).limit)).toEqual([2, 2]);
      onlyWorkspace(WS.a);
    });

    it("passes the filters: to and from lower-cased, since as a time; another workspace's mail never shows", async () => {
      const to = await api.call("GET /v1/received-emails", "/v1/received-emails?to=Reply%2Bt1@In.Acme.Test");
      expect(to.data.receivedEmails.items.map((e: { id: string }) => e.id)).toEqual(["rcv_2"]);
      const from = await api.call("GET /v1/received-emails", "/v1/received-emails?from=bob@example.test");
      expect(from.data.receivedEmails.items.map((e: { id: string }) => e.id)).toEqual(["rcv_1"]);
      const since = await api.call("GET /v1/received-emails", "/v1/received-emails?since=2029-11-15");
      expect(since.data.receivedEmails.items.map((e: { id: string }) => e.id)).toEqual(["rcv_1", "rcv_2"]);
      await api.call("GET /v1/received-emails", "/v1/received-emails?since=2029-12-01T02:00:00%2B02:00");
      const asked = fake.calls.map((c) => c.request as { to: string; from: string; since?: Parameters<typeof timestampDate>[0] });
      expect(asked[0]!.to).toBe("reply+t1@in.acme.test");
      expect(asked[1]!.from).toBe("bob@example.test");
      expect(timestampDate(asked[2]!.since!).toISOString()).toBe("2029-11-15T00:00:00.000Z");
      expect(timestampDate(asked[3]!.since!).toISOString()).toBe("2029-12-01T00:00:00.000Z");
      onlyWorkspace(WS.a);

      fake.calls.length = 0;
      const b = await api.call("GET /v1/received-emails", "/v1/received-emails", undefined, auth(KEYS.b));
      expect(b.data.receivedEmails.items.map((e: { id: string }) => e.id)).toEqual(["rcv_other"]);
      onlyWorkspace(WS.b);
    });

    it("refuses bad filters with a 400 naming the parameter, before asking the unit", async () => {
      const cases: Array<[string, RegExp]> = [
        ["since=yesterday", /^since must be an ISO 8601 date-time with a zone/],
        ["since=2030-02-30", /^since must be/],
        ["since=2030-01-01T00:00:00", /^since must be/],
        ["limit=0", /^limit: limit must be a whole number from 1 to 100/],
        ["limit=101", /^limit: /],
        ["limit=ten", /^limit: /],
        ["to=support", /^to: to must be a whole email address/],
        ["from=%40example.test", /^from: from must be a whole email address/],
        ["workspaceId=ws_rcv_b", /workspaceId/],
      ];
      for (const [query, message] of cases) {
        const res = await api.call("GET /v1/received-emails", `/v1/received-emails?${query}`);
        expect([res.statusCode, res.data.code], query).toEqual([400, "invalid_request"]);
        expect(res.data.message, query).toMatch(message);
      }
      expect(fake.calls).toEqual([]);
      const cursor = await api.call("GET /v1/received-emails", "/v1/received-emails?cursor=zzz");
      expect([cursor.statusCode, cursor.data.code]).toEqual([400, "invalid_cursor"]);
    });

    it("reads one with its text, HTML, stripped reply and headers; 404 for another workspace's and for ids that cannot exist", async () => {
      const res = await api.call("GET /v1/received-emails/{id}", "/v1/received-emails/rcv_1");
      expect(res.data.receivedEmail).toMatchObject({
        id: "rcv_1", text: "Thanks!\n\n> earlier", html: "<p>Thanks!</p>", strippedTextReply: "Thanks!",
        headers: [{ name: "Subject", value: "Re: your invoice" }], ruleId: "inr_9", action: "webhook", inReplyToHeader: "abc@acme.test", references: ["abc@acme.test"],
      });
      const foreign = await api.call("GET /v1/received-emails/{id}", "/v1/received-emails/rcv_other");
      expect([foreign.statusCode, foreign.data.code]).toEqual([404, "received_email_not_found"]);
      onlyWorkspace(WS.a);
      fake.calls.length = 0;
      for (const id of ["1", "trs_01jqz8k4m2x7v9c3n5b6t1w0ye", "rcv_..%2F..", "rcv_"]) {
        expect((await api.call("GET /v1/received-emails/{id}", `/v1/received-emails/${id}`)).data.code, id).toBe("received_email_not_found");
      }
      expect(fake.calls).toEqual([]);
    });
  });

  describe("downloads", () => {
    const get = (url: string, key: string = KEYS.a) => app.inject({ method: "GET", url, headers: auth(key) });

    it("streams an attachment byte for byte, as a download with its type, size and escaped name", async () => {
      const res = await get("/v1/received-emails/rcv_1/attachments/att_1");
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(REPORT)).toBe(true);
      expect(res.headers["content-type"]).toBe("application/pdf");
      expect(res.headers["content-length"]).toBe(String(REPORT.byteLength));
      expect(res.headers["content-disposition"]).toBe(`attachment; filename="Q3 _final___ (1).pdf"; filename*=UTF-8''Q3%20%22final%22%5C%C3%A9%20%281%29.pdf`);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["content-security-policy"]).toBe("default-src 'none'; sandbox");
      expect(res.headers["cache-control"]).toBe("private, no-store");
      expect(fake.calls.map((c) => [c.method, c.workspaceId])).toEqual([["getReceivedAttachment", WS.a]]);
      expect(fake.calls[0]!.request).toMatchObject({ emailId: "rcv_1", attachmentId: "att_1" });
    });

    it("never renders what the sender chose: HTML is still a download; a type that is no media type is opaque bytes", async () => {
      const page = await get("/v1/received-emails/rcv_1/attachments/att_2");
      expect(page.headers["content-type"]).toBe("text/html");
      expect(page.headers["content-disposition"]).toMatch(/^attachment; filename="page\.html"/);
      expect(page.headers["x-content-type-options"]).toBe("nosniff");
      expect(page.body).toBe("<script>alert(1)</script>");
      const odd = await get("/v1/received-emails/rcv_1/attachments/att_3");
      expect(odd.headers["content-type"]).toBe("application/octet-stream");
      expect(odd.headers["x-evil"]).toBeUndefined();
    });

    it("streams the raw message as message/rfc822 named <id>.eml", async () => {
      const res = await get("/v1/received-emails/rcv_1/raw");
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(RAW)).toBe(true);
      expect(res.headers["content-type"]).toBe("message/rfc822");
      expect(res.headers["content-length"]).toBe(String(RAW.byteLength));
      expect(res.headers["content-disposition"]).toBe(`attachment; filename="rcv_1.eml"; filename*=UTF-8''rcv_1.eml`);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
    });

    it("answers another workspace's files, unknown ones and impossible ids with JSON 404s (the unit's refusal inside the stream included)", async () => {
      const cases: Array<[string, string, string]> = [
        ["GET /v1/received-emails/{id}/attachments/{attachmentId}", "/v1/received-emails/rcv_other/attachments/att_1", "received_email_not_found"],
        ["GET /v1/received-emails/{id}/attachments/{attachmentId}", "/v1/received-emails/rcv_1/attachments/att_9", "received_attachment_not_found"],
        ["GET /v1/received-emails/{id}/attachments/{attachmentId}", "/v1/received-emails/rcv_1/attachments/0", "received_attachment_not_found"],
        ["GET /v1/received-emails/{id}/attachments/{attachmentId}", "/v1/received-emails/x/attachments/att_1", "received_email_not_found"],
        ["GET /v1/received-emails/{id}/raw", "/v1/received-emails/rcv_other/raw", "received_email_not_found"],
        ["GET /v1/received-emails/{id}/raw", "/v1/received-emails/rcv_2/raw", "received_email_not_found"],
        ["GET /v1/received-emails/{id}/raw", "/v1/received-emails/nope/raw", "received_email_not_found"],
      ];
      for (const [op, url, code] of cases) {
        const res = await api.call(op, url);
        expect([res.statusCode, res.data.code], url).toEqual([404, code]);
        expect(res.headers["content-type"]).toMatch(/^application\/json/);
      }
      onlyWorkspace(WS.a);
      // Key B reads its own.
      expect((await get("/v1/received-emails/rcv_other/attachments/att_1", KEYS.b)).body).toBe("secret");
    });

    it("answers 503 (JSON) when the unit is down before the first byte", async () => {
      fake.down = true;
      const res = await api.call("GET /v1/received-emails/{id}/raw", "/v1/received-emails/rcv_1/raw");
      expect([res.statusCode, res.data.code]).toEqual([503, "service_unavailable"]);
    });

    describe("over HTTP", () => {
      let base = "";
      const server = () => app.server;
      beforeAll(async () => {
        await app.listen({ port: 0, host: "127.0.0.1" });
        base = `http://127.0.0.1:${(server().address() as AddressInfo).port}`;
      });

      it("ends the response early when the stream fails mid-way: never a cut file that looks whole", async () => {
        const content = fake.contents.get("rcv_1/att_1")!;
        content.failAfterFirst = true;
        try {
          // The headers and the first chunk arrive, then the connection closes before the announced length.
          const got = await new Promise<{ status?: number; length?: string; bytes: number; error?: Error; complete: boolean }>((resolve) => {
            const out: { status?: number; length?: string; bytes: number; error?: Error; complete: boolean } = { bytes: 0, complete: false };
            const req = http.get(`${base}/v1/received-emails/rcv_1/attachments/att_1`, { headers: auth(KEYS.a) }, (res) => {
              out.status = res.statusCode;
              out.length = res.headers["content-length"];
              res.on("data", (c: Buffer) => (out.bytes += c.byteLength));
              res.on("end", () => (out.complete = res.complete));
              res.on("error", (err) => (out.error = err));
              res.on("close", () => resolve(out));
            });
            req.on("error", (err) => resolve({ ...out, error: err }));
          });
          expect(got).toMatchObject({ status: 200, length: String(REPORT.byteLength), complete: false });
          expect(got.bytes).toBeGreaterThan(0);
          expect(got.bytes).toBeLessThan(REPORT.byteLength);
        } finally {
          content.failAfterFirst = false;
        }
      });

      it("cancels the stream when the client goes away", async () => {
        fake.plant({ id: "rcv_endless", workspaceId: WS.a, attachments: [{ id: "att_1", bytes: Buffer.alloc(10) }] });
        const content = fake.contents.get("rcv_endless/att_1")!;
        content.endless = true;
        // Announced large enough that only the client's going away ends it.
        content.info.size = BigInt(1024 ** 3);
        const before = fake.cancelled;
        await new Promise<void>((resolve, reject) => {
          const req = http.get(`${base}/v1/received-emails/rcv_endless/attachments/att_1`, { headers: auth(KEYS.a) }, (res) => {
            res.once("data", () => {
              req.destroy();
              resolve();
            });
          });
          req.on("error", () => {});
          req.setTimeout(5000, () => reject(new Error("no data")));
        });
        for (let i = 0; i < 100 && fake.cancelled === before; i++) await new Promise((r) => setTimeout(r, 20));
        expect(fake.cancelled).toBe(before + 1);
      });
    });
  });

  it("documents every route and drove every documented response (downloads' bytes checked above)", async () => {
    const doc = app.openapiDocument();
    const ops = Object.entries(doc.paths).filter(([p]) => p.startsWith("/v1/inbound/") || p.startsWith("/v1/received-emails")).flatMap(([p, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${p}`));
    expect(ops.sort()).toEqual([
      "DELETE /v1/inbound/domains/{id}", "DELETE /v1/inbound/domains/{id}/rules/{ruleId}",
      "GET /v1/inbound/domains", "GET /v1/inbound/domains/{id}", "GET /v1/inbound/domains/{id}/rules",
      "GET /v1/received-emails", "GET /v1/received-emails/{id}", "GET /v1/received-emails/{id}/attachments/{attachmentId}", "GET /v1/received-emails/{id}/raw",
      "POST /v1/inbound/domains", "POST /v1/inbound/domains/{id}/rules", "POST /v1/inbound/domains/{id}/verify",
    ]);
    const raw = doc.paths["/v1/received-emails/{id}/raw"]!.get as { responses: Record<string, { content: Record<string, unknown>; headers: Record<string, unknown> }> };
    expect(Object.keys(raw.responses["200"]!.content)).toEqual(["message/rfc822"]);
    expect(Object.keys(raw.responses["200"]!.headers)).toEqual(expect.arrayContaining(["Content-Disposition", "Content-Length", "X-Content-Type-Options"]));
    const downloads = new Set(["GET /v1/received-emails/{id}/attachments/{attachmentId} 200", "GET /v1/received-emails/{id}/raw 200"]);
    expect(api.undriven((p) => p.startsWith("/v1/inbound/") || p.startsWith("/v1/received-emails")).filter((k) => !downloads.has(k))).toEqual([]);
  });
});
