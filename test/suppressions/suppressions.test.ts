/**
 * The suppression list through the public API (DESIGN §10.3, issue 48): every unit a real
 * process, nats-server, the SMTP sink and a webhook receiver. Each endpoint with its refusals
 * (bad address, bad domain, unknown suppression, a complaint without force), the streamed CSV
 * import (rows checked, idempotent) and export, one workspace never reaching another's list,
 * a domain suppression stopping a single send, a batch item, a cc, a broadcast recipient and
 * an automation send, and the SUPPRESSION_CREATED / SUPPRESSION_DELETED webhooks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "csv-parse/sync";
import { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { TeamService, type AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver } from "../webhooks/receiver.js";
import { IMPORT_BATCH } from "../../gateway/src/routes/suppressions-import.js";

const A = "ws_supp_a";
const B = "ws_supp_b";
const C = "ws_supp_c";
const SENDS = "ws_supp_sends";
const AUTO = "ws_supp_auto";
const BULK = "ws_supp_bulk";
const BATCHES = "ws_supp_batches";
const keyOf = (ws: string) => `mr_test_${ws}_1`;
const flagsOn = { broadcastEarlyAccess: true, emailApiAddon: true, verified: true };
const workspace = (id: string, over: Record<string, unknown> = {}) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: keyOf(id), scopes: ["api_user"] }],
  verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: flagsOn, monthlyLimit: 100_000, sendingAccountNew: false,
  ...over,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last value: ${JSON.stringify(value).slice(0, 1500)}`);
    await sleep(100);
    value = await read();
  }
  return value;
}

describe("suppressions through the public API (real processes)", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const as = (ws: string) => (method: string, path: string, body?: unknown) => sys.api(method, path, { key: keyOf(ws), body });
  const a = as(A);
  const b = as(B);
  const csv = (ws: string, path: string, text: string, contentType = "text/csv") =>
    sys.api("POST", path, { key: keyOf(ws), body: text, headers: { "content-type": contentType } });
  const mailsTo = (address: string) => sys.sink!.messages.filter((m) => m.to.includes(address));

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "webhooks", "automation", "gateway"],
      bootstrap: {
        workspaces: [
          workspace(A), workspace(B), workspace(C), workspace(SENDS), workspace(BULK), workspace(BATCHES),
          workspace(AUTO, {
            templates: [{ name: "hello", subject: "Hello {{firstName}}", html: "<p>Hi {{firstName}}</p>", fromEmail: "team@acme.test", fromName: "Acme" }],
          }),
        ],
      },
    });
  }, 180_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  it("adds an address and a domain (201), lists them with filters and paging, and lifts them", async () => {
    const added = await a("POST", "/v1/suppressions", { email: "Ann@Example.test" });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toEqual({ suppression: { email: "ann@example.test", reason: "manual", createdAt: expect.any(String) } });
    const domain = await a("POST", "/v1/suppressions", { domain: "Spammy.Test", reason: "complaint", source: "abuse desk" });
    expect(domain.status, JSON.stringify(domain.body)).toBe(201);
    expect(domain.body.suppression).toEqual({ domain: "spammy.test", reason: "complaint", createdAt: expect.any(String), source: "abuse desk" });
    // Idempotent: the same address again is the same entry.
    const again = await a("POST", "/v1/suppressions", { email: "ann@example.test", reason: "manual" });
    expect(again.status).toBe(201);
    expect(again.body.suppression.createdAt).toBe(added.body.suppression.createdAt);
    const since = new Date().toISOString();
    await sleep(5);
    expect((await a("POST", "/v1/suppressions", { email: "bob@example.test", reason: "hard_bounce" })).status).toBe(201);

    const all = await a("GET", "/v1/suppressions");
    expect(all.status).toBe(200);
    expect(all.body.suppressions).toEqual({
      items: [
        { domain: "spammy.test", reason: "complaint", createdAt: expect.any(String), source: "abuse desk" },
        { email: "ann@example.test", reason: "manual", createdAt: expect.any(String) },
        { email: "bob@example.test", reason: "hard_bounce", createdAt: expect.any(String) },
      ],
      cursor: null,
      hasMore: false,
    });
    expect((await a("GET", "/v1/suppressions?reason=hard_bounce")).body.suppressions.items.map((s: any) => s.email)).toEqual(["bob@example.test"]);
    expect((await a("GET", `/v1/suppressions?since=${encodeURIComponent(since)}`)).body.suppressions.items.map((s: any) => s.email)).toEqual(["bob@example.test"]);
    const page1 = await a("GET", "/v1/suppressions?limit=2");
    expect(page1.body.suppressions).toMatchObject({ hasMore: true, cursor: expect.any(String) });
    const page2 = await a("GET", `/v1/suppressions?limit=2&cursor=${encodeURIComponent(page1.body.suppressions.cursor)}`);
    expect(page2.body.suppressions).toEqual({ items: [expect.objectContaining({ email: "bob@example.test" })], cursor: null, hasMore: false });

    // A complaint needs force; the query or the body gives it.
    const refused = await a("DELETE", "/v1/suppressions/spammy.test");
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ statusCode: 409, code: "force_required" });
    expect((await a("GET", "/v1/suppressions?reason=complaint")).body.suppressions.items).toHaveLength(1);
    const forced = await a("DELETE", "/v1/suppressions/spammy.test?force=true");
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(forced.body).toEqual({ suppression: { domain: "spammy.test", reason: "complaint", createdAt: expect.any(String), source: "abuse desk" }, isDeleted: true });
    await a("POST", "/v1/suppressions", { email: "carl@example.test", reason: "complaint" });
    expect((await a("DELETE", `/v1/suppressions/${encodeURIComponent("carl@example.test")}`, { force: true })).status).toBe(200);
    const lifted = await a("DELETE", "/v1/suppressions/bob@example.test");
    expect(lifted.status).toBe(200);
    expect(lifted.body.suppression).toMatchObject({ email: "bob@example.test", reason: "hard_bounce" });
    expect((await a("GET", "/v1/suppressions")).body.suppressions.items.map((s: any) => s.email ?? s.domain)).toEqual(["ann@example.test"]);
  });

  it("refuses bad addresses, bad domains, unknown suppressions and bad parameters with clear 4xx", async () => {
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", "/v1/suppressions", { email: "not-an-address" }, 400, "invalid_email"],
      ["POST", "/v1/suppressions", { email: "a@b" }, 400, "invalid_email"],
      ["POST", "/v1/suppressions", { domain: "not a domain" }, 400, "invalid_domain"],
      ["POST", "/v1/suppressions", { domain: "localhost" }, 400, "invalid_domain"],
      ["POST", "/v1/suppressions", { email: "a@x.test", domain: "x.test" }, 400, "email_and_domain"],
      ["POST", "/v1/suppressions", {}, 400, "invalid_request"],
      ["POST", "/v1/suppressions", { email: "a@x.test", reason: "bored" }, 400, "invalid_request"],
      ["POST", "/v1/suppressions", { email: "a@x.test", extra: 1 }, 400, "invalid_request"],
      ["DELETE", "/v1/suppressions/nobody@example.test", undefined, 404, "suppression_not_found"],
      ["DELETE", "/v1/suppressions/unknown.test", undefined, 404, "suppression_not_found"],
      ["DELETE", "/v1/suppressions/not%20valid", undefined, 400, "invalid_domain"],
      ["DELETE", "/v1/suppressions/x@", undefined, 400, "invalid_email"],
      ["GET", "/v1/suppressions?reason=bored", undefined, 400, "invalid_request"],
      ["GET", "/v1/suppressions?since=yesterday", undefined, 400, "invalid_request"],
      ["GET", "/v1/suppressions?limit=0", undefined, 400, "invalid_request"],
      ["GET", "/v1/suppressions?cursor=ws_other:x", undefined, 400, "invalid_cursor"],
      ["GET", "/v1/suppressions/export?reason=bored", undefined, 400, "invalid_request"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const res = await a(method, path, body);
      expect([res.status, res.body?.code], `${method} ${path} ${JSON.stringify(body)}`).toEqual([status, code]);
    }
    // Nothing was written by any of them.
    expect((await a("GET", "/v1/suppressions")).body.suppressions.items.map((s: any) => s.email ?? s.domain)).toEqual(["ann@example.test"]);
  });

  it("imports a streamed CSV (rows checked, idempotent) and exports it back", async () => {
    const file = [
      "Email,Reason,Source,created_at,Ignored",
      "zed@example.test,,,2024-05-01T10:00:00Z,x",
      "yan@example.test,,,,",
      "not-an-address,,,,",
      "xia@example.test,bored,,,",
      "wes@example.test,,,tomorrow,",
      ",,,,",
      "\"vic@example.test\",unsubscribed,\"sendgrid, 2024\",2024-06-01,",
      "zed@example.test,complaint,,,",
    ].join("\r\n");
    const first = await csv(C, "/v1/suppressions/import?filename=postmark-bounces.csv", file);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toEqual({
      imported: 3,
      existing: 1,
      rejected: [
        { line: 4, code: "invalid_email", reason: expect.stringContaining("not-an-address") },
        { line: 5, code: "invalid_reason", reason: expect.any(String) },
        { line: 6, code: "invalid_created_at", reason: expect.any(String) },
        { line: 7, code: "missing_target", reason: expect.any(String) },
      ],
      rejectedCount: 4,
    });
    const listed = (await as(C)("GET", "/v1/suppressions")).body.suppressions.items;
    expect(listed).toEqual([
      { email: "vic@example.test", reason: "unsubscribed", createdAt: "2024-06-01T00:00:00.000Z", source: "sendgrid, 2024" },
      { email: "yan@example.test", reason: "imported", createdAt: expect.any(String), source: "postmark-bounces.csv" },
      // The later row's stronger reason replaced the first one's (imported).
      { email: "zed@example.test", reason: "complaint", createdAt: "2024-05-01T10:00:00.000Z", source: "postmark-bounces.csv" },
    ]);
    const second = await csv(C, "/v1/suppressions/import?filename=postmark-bounces.csv", file);
    expect(second.body).toMatchObject({ imported: 0, existing: 4, rejectedCount: 4 });

    expect((await csv(C, "/v1/suppressions/import", "name,phone\nann,1\n")).body).toMatchObject({ code: "invalid_csv" });
    expect((await csv(C, "/v1/suppressions/import", "")).body).toMatchObject({ code: "invalid_csv" });
    const broken = await csv(C, "/v1/suppressions/import", "email\n\"unclosed@example.test\n");
    expect([broken.status, broken.body.code]).toEqual([400, "invalid_csv"]);
    const json = await sys.api("POST", "/v1/suppressions/import", { key: keyOf(C), body: { email: "a@example.test" } });
    expect([json.status, json.body.code]).toEqual([400, "invalid_csv"]);
    expect((await as(C)("GET", "/v1/suppressions")).body.suppressions.items).toHaveLength(3);

    const exported = await sys.api("GET", "/v1/suppressions/export", { key: keyOf(C) });
    expect(exported.status).toBe(200);
    expect(exported.headers.get("content-type")).toMatch(/^text\/csv/);
    const rows = parse(exported.body as string, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toEqual([
      { email: "vic@example.test", domain: "", reason: "unsubscribed", created_at: "2024-06-01T00:00:00.000Z", source: "sendgrid, 2024" },
      { email: "yan@example.test", domain: "", reason: "imported", created_at: expect.any(String), source: "postmark-bounces.csv" },
      { email: "zed@example.test", domain: "", reason: "complaint", created_at: "2024-05-01T10:00:00.000Z", source: "postmark-bounces.csv" },
    ]);
    const complaints = parse((await sys.api("GET", "/v1/suppressions/export?reason=complaint", { key: keyOf(C) })).body as string, { columns: true });
    expect(complaints.map((r: any) => r.email)).toEqual(["zed@example.test"]);

    // The export imports back unchanged into another workspace, domains included.
    expect((await as(C)("POST", "/v1/suppressions", { domain: "dropped.test" })).status).toBe(201);
    const full = (await sys.api("GET", "/v1/suppressions/export", { key: keyOf(C) })).body as string;
    const copy = await csv(SENDS, "/v1/suppressions/import", full);
    expect(copy.body).toMatchObject({ imported: 4, existing: 0, rejectedCount: 0 });
    expect((await as(SENDS)("GET", "/v1/suppressions")).body.suppressions.items).toEqual((await as(C)("GET", "/v1/suppressions")).body.suppressions.items);
  });

  it("one workspace never sees, lifts or is stopped by another's suppressions", async () => {
    expect((await b("GET", "/v1/suppressions")).body.suppressions).toEqual({ items: [], cursor: null, hasMore: false });
    expect(parse((await sys.api("GET", "/v1/suppressions/export", { key: keyOf(B) })).body as string)).toEqual([["email", "domain", "reason", "created_at", "source"]]);
    expect((await b("DELETE", "/v1/suppressions/ann@example.test")).status).toBe(404);
    expect((await a("GET", "/v1/suppressions")).body.suppressions.items.map((s: any) => s.email)).toEqual(["ann@example.test"]);
    const aCursor = (await a("GET", "/v1/suppressions?limit=1")).body.suppressions;
    expect(aCursor.hasMore).toBe(false);
    expect((await b("GET", `/v1/suppressions?cursor=${encodeURIComponent(`${A}:ann@example.test`)}`)).body.code).toBe("invalid_cursor");
    // B sends to the address A suppressed: delivered.
    const sent = await b("POST", "/v1/emails", { from: "hi@acme.test", to: "ann@example.test", subject: "Not suppressed here", html: "<p>Hi</p>" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await until("B's mail to ann delivered", () => mailsTo("ann@example.test").filter((m) => m.raw.includes("Not suppressed here")).length, (n) => n === 1);
  });

  it("a domain suppression stops a single send, a batch item and a cc, named in the email record", async () => {
    const api = as(SENDS);
    expect((await api("POST", "/v1/suppressions", { domain: "blocked.test" })).status).toBe(201);
    const single = await api("POST", "/v1/emails", { from: "hi@acme.test", to: "Amy@Blocked.test", subject: "Single", html: "<p>Hi</p>" });
    expect(single.status, JSON.stringify(single.body)).toBe(200);
    const record = await until("the single send's record", async () => (await api("GET", `/v1/emails/${single.body.email.id}`)).body.email, (e) => e?.status === "FAILED");
    expect(record.reason).toMatch(/suppress.*domain blocked\.test/i);

    const batch = await api("POST", "/v1/emails/batch", {
      emails: [
        { from: "hi@acme.test", to: "ok@example.test", subject: "Batch item", html: "<p>Hi</p>" },
        { from: "hi@acme.test", to: "bo@blocked.test", subject: "Batch item", html: "<p>Hi</p>" },
      ],
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const [okId, blockedId] = batch.body.emails.successful.map((e: any) => e.id);
    expect((await until("the batch's blocked item", async () => (await api("GET", `/v1/emails/${blockedId}`)).body.email, (e) => e?.status === "FAILED")).reason).toMatch(/domain blocked\.test/);
    await until("the batch's other item delivered", () => mailsTo("ok@example.test").filter((m) => m.raw.includes("Batch item")).length, (n) => n === 1);
    expect((await api("GET", `/v1/emails/${okId}`)).status).toBe(200);

    // A cc at the domain is left out of the envelope and listed on the record like an address.
    const email = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
    const { email: withCc } = await email.sendEmail({
      workspaceId: SENDS,
      email: { to: "cc-test@example.test", content: { case: "raw", value: { from: "hi@acme.test", subject: "With cc", html: "<p>Hi</p>" } }, cc: ["cy@blocked.test"] },
    });
    expect(withCc!.suppressed.map((s) => [s.email, s.reason])).toEqual([["cy@blocked.test", "manually suppressed (domain blocked.test)"]]);
    const [message] = await until("the cc'd email delivered", () => mailsTo("cc-test@example.test"), (m) => m.length === 1);
    expect(message!.to).toEqual(["cc-test@example.test"]);
    await sleep(300);
    expect(sys.sink!.messages.filter((m) => m.to.some((t) => t.endsWith("@blocked.test")))).toEqual([]);
  });

  it("a domain suppression stops a broadcast recipient", async () => {
    const api = as(SENDS);
    for (const email of ["pat@example.test", "quin@blocked.test"]) {
      const res = await api("POST", "/v1/contacts", { properties: { email, firstName: email.split("@")[0], status: "SUBSCRIBED" } });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    }
    const created = await api("POST", "/v1/broadcasts", {
      name: "Domain test", subject: "News #supp-bc", fromEmail: "news@acme.test", fromName: "Acme", html: "<html><body><p>News #supp-bc</p></body></html>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id;
    expect((await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" })).status).toBe(200);
    await until("the broadcast completed", async () => (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast, (bc) => bc?.status === "COMPLETED");
    const got = await until("pat's copy", () => sys.sink!.messages.filter((m) => m.raw.includes("#supp-bc")).flatMap((m) => m.to), (to) => to.includes("pat@example.test"));
    await sleep(500);
    expect(got.filter((t) => t.endsWith("@blocked.test"))).toEqual([]);
    expect(sys.sink!.messages.filter((m) => m.raw.includes("#supp-bc")).flatMap((m) => m.to).filter((t) => t.endsWith("@blocked.test"))).toEqual([]);
  });

  it("a domain suppression stops an automation's send (the run exits suppressed)", async () => {
    const api = as(AUTO);
    expect((await api("POST", "/v1/suppressions", { domain: "blocked.test" })).status).toBe(201);
    const created = await api("POST", "/v1/automations", { name: "Welcome", trigger: { type: "contact_created" }, steps: [{ id: "hi", type: "send", template: "hello" }] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const auto = created.body.automation.id;
    expect((await api("POST", `/v1/automations/${auto}/activate`, {})).status).toBe(200);
    const ids: Record<string, string> = {};
    for (const email of ["rita@example.test", "sam@blocked.test"]) {
      const res = await api("POST", "/v1/contacts", { properties: { email, firstName: email.split("@")[0] } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids[email] = res.body.contact.id;
    }
    const runs = await until("both runs ended", async () => (await api("GET", `/v1/automations/${auto}/runs?limit=10`)).body.runs.items as any[],
      (r) => r.length === 2 && r.every((x) => x.status !== "ACTIVE"));
    const byContact = new Map(runs.map((r) => [r.contactId, r]));
    expect(byContact.get(ids["sam@blocked.test"])).toMatchObject({ status: "EXITED", exitReason: "suppressed" });
    expect(byContact.get(ids["rita@example.test"])).toMatchObject({ status: "COMPLETED" });
    await until("rita's welcome", () => mailsTo("rita@example.test").length, (n) => n === 1);
    expect(mailsTo("sam@blocked.test")).toEqual([]);
  });

  it("announces SUPPRESSION_CREATED and SUPPRESSION_DELETED to webhooks, once each", async () => {
    const hook = await b("POST", "/v1/webhooks", { url: receiver.url, events: ["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    expect((await b("POST", "/v1/suppressions", { email: "hooked@example.test", source: "api" })).status).toBe(201);
    expect((await b("POST", "/v1/suppressions", { email: "hooked@example.test" })).status).toBe(201);
    expect((await csv(B, "/v1/suppressions/import?filename=list.csv", "domain\nhooked.test\n")).body).toMatchObject({ imported: 1 });
    expect((await b("DELETE", "/v1/suppressions/hooked@example.test")).status).toBe(200);
    const ofB = () => receiver.received.filter((r) => r.event.workspaceId === B);
    const got = await until("three suppression webhooks", ofB, (r) => r.length >= 3);
    await sleep(1_000);
    expect(ofB().map((r) => [r.event.type, r.event.data.suppression])).toEqual(expect.arrayContaining([
      ["SUPPRESSION_CREATED", { email: "hooked@example.test", reason: "manual", createdAt: expect.any(String), source: "api" }],
      ["SUPPRESSION_CREATED", { domain: "hooked.test", reason: "imported", createdAt: expect.any(String), source: "list.csv" }],
      ["SUPPRESSION_DELETED", { email: "hooked@example.test", reason: "manual", createdAt: expect.any(String), source: "api" }],
    ]));
    expect(ofB()).toHaveLength(3);
    expect(got.every((r) => r.event.id.startsWith("dev_"))).toBe(true);
    // The other workspaces' many changes reached no webhook of B.
    expect(receiver.received.filter((r) => r.event.workspaceId !== B && r.event.workspaceId !== BULK)).toEqual([]);
  });

  it("an import of several batches counts each row once, reports rejected rows by line across batches, is idempotent and one audit entry", async () => {
    // Two full batches of the gateway and a part: rows 2.. are the file's lines 2..
    const n = 2 * IMPORT_BATCH + 345;
    const lines = Array.from({ length: n }, (_, i) => `many${i}@example.test,${i % 3 ? "imported" : "hard_bounce"}`);
    const bad = [IMPORT_BATCH + 10, 2 * IMPORT_BATCH + 7]; // indexes in the second and third batches
    for (const i of bad) lines[i] = `not-an-address-${i},imported`;
    lines[2 * IMPORT_BATCH + 20] = "many4@example.test,complaint"; // a row of the first batch again, stronger
    const file = ["email,reason", ...lines].join("\n");
    const first = await csv(BATCHES, "/v1/suppressions/import?filename=many.csv", file);
    expect(first.status, JSON.stringify(first.body).slice(0, 500)).toBe(200);
    expect(first.body).toEqual({
      imported: n - bad.length - 1,
      existing: 1,
      rejected: bad.map((i) => ({ line: i + 2, code: "invalid_email", reason: expect.stringContaining(`not-an-address-${i}`) })),
      rejectedCount: bad.length,
    });
    const again = await csv(BATCHES, "/v1/suppressions/import?filename=many.csv", file);
    expect(again.body).toMatchObject({ imported: 0, existing: n - bad.length, rejectedCount: bad.length });
    const exported = parse((await sys.api("GET", "/v1/suppressions/export", { key: keyOf(BATCHES) })).body as string, { columns: true }) as Array<Record<string, string>>;
    expect(exported).toHaveLength(n - bad.length - 1);
    expect(exported.find((r) => r.email === "many4@example.test")).toMatchObject({ reason: "complaint", source: "many.csv" });
    expect(exported.find((r) => r.email === "many5@example.test")).toMatchObject({ reason: "imported", source: "many.csv" });

    const team = connectClient(TeamService, `http://127.0.0.1:${sys.ports.accounts}`);
    const entries = await until("the imports' audit entries", async () => (await team.listAuditLog({ workspaceId: BATCHES, limit: 500 })).entries.filter((e) => e.action === "suppression.import"), (e) => e.length >= 2);
    await sleep(500);
    expect((await team.listAuditLog({ workspaceId: BATCHES, limit: 500 })).entries.filter((e) => e.action === "suppression.import")).toHaveLength(2);
    expect(new Set(entries.map((e) => e.requestId)).size).toBe(2);
  }, 120_000);

  it("an import of N rows is N SUPPRESSION_CREATED deliveries to a subscribed webhook (sent in batches), and one audit entry", async () => {
    const hook = await as(BULK)("POST", "/v1/webhooks", { url: receiver.url, events: ["SUPPRESSION_CREATED"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    // Several of the audience unit's event batches (the gateway's batches: the next test).
    const n = 1_234;
    const rows = Array.from({ length: n }, (_, i) => `bulk${i}@example.test,${i % 2 ? "hard_bounce" : "imported"}`);
    const res = await csv(BULK, "/v1/suppressions/import?filename=bulk.csv", ["email,reason", ...rows, "bulk7@example.test,complaint"].join("\n"));
    expect(res.body).toEqual({ imported: n, existing: 1, rejected: [], rejectedCount: 0 });
    const ofBulk = () => receiver.received.filter((r) => r.event.workspaceId === BULK);
    await until("a webhook per imported row", () => ofBulk().length, (count) => count >= n, 90_000);
    await sleep(1_000);
    const got = ofBulk();
    expect(got).toHaveLength(n);
    expect(new Set(got.map((r) => r.event.id)).size).toBe(n);
    expect(got.every((r) => r.event.type === "SUPPRESSION_CREATED" && r.event.id.startsWith("dev_"))).toBe(true);
    expect(new Set(got.map((r) => r.event.data.suppression.email))).toEqual(new Set(rows.map((r) => r.split(",")[0])));
    expect(got.find((r) => r.event.data.suppression.email === "bulk1@example.test")!.event.data.suppression).toEqual(
      { email: "bulk1@example.test", reason: "hard_bounce", createdAt: expect.any(String), source: "bulk.csv" },
    );

    // Importing it again announces nothing more.
    expect((await csv(BULK, "/v1/suppressions/import?filename=bulk.csv", ["email", ...rows.map((r) => r.split(",")[0])].join("\n"))).body).toMatchObject({ imported: 0, existing: n });
    await sleep(1_500);
    expect(ofBulk()).toHaveLength(n);

    // Each import, whatever its batches, is one audit entry (its first batch carries the actor).
    const team = connectClient(TeamService, `http://127.0.0.1:${sys.ports.accounts}`);
    const imports = await until("the imports' audit entries", async () => {
      const all: AuditEntry[] = [];
      let pageToken = "";
      do {
        const page = await team.listAuditLog({ workspaceId: BULK, pageToken, limit: 500 });
        all.push(...page.entries);
        pageToken = page.nextPageToken;
      } while (pageToken);
      return all.filter((e) => e.action === "suppression.import");
    }, (entries) => entries.length >= 2);
    await sleep(500);
    expect(imports).toHaveLength(2);
    expect(new Set(imports.map((e) => e.requestId)).size).toBe(2);
  }, 150_000);
});
