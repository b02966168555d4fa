import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseCsv } from "csv-parse/sync";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { DeliveryState, WebhookService } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { startReceiver } from "../webhooks/receiver.js";
import { startSystem, type TestSystem } from "../harness/system.js";

/**
 * The email log, its CSV export, one contact's data export and its erasure (issue 26, DESIGN
 * §9.3) through the public HTTP API, against the real processes (accounts, audience, renderer,
 * email, delivery, webhooks, gateway), nats-server and an SMTP sink.
 */

const KEY = "mr_test_log_1";
const OTHER_KEY = "mr_test_log_other_1";

const bootstrap = {
  workspaces: [
    {
      id: "ws_log", name: "Log", timezone: "UTC",
      apiKeys: [{ key: KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }],
    },
    {
      id: "ws_log_other", name: "Other", timezone: "UTC",
      apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["other.test"], members: [],
      monthlyLimit: 1000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(last)}`);
    await sleep(100);
    last = await read();
  }
  return last;
}

interface Item { id: string; to: string; status: string; createdAt: string; groupBy?: string; [k: string]: unknown }

describe("the email log, exports and erasure over the public API", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown, key = KEY) => sys.api(method, path, { key, body });
  const raw = (to: string, extra: Record<string, unknown> = {}) => ({ from: "Acme <team@acme.test>", to, subject: "Hello", html: "<p>Hello</p>", ...extra });
  async function send(to: string, extra: Record<string, unknown> = {}, key = KEY): Promise<Item> {
    const res = await api("POST", "/v1/emails", raw(to, extra), key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.email;
  }
  async function statusBecomes(id: string, status: string, timeoutMs = 20_000): Promise<Item> {
    const deadline = Date.now() + timeoutMs;
    let last: { body?: { email?: Item } } | undefined;
    while (Date.now() < deadline) {
      last = await api("GET", `/v1/emails/${id}`);
      if (last.body?.email?.status === status) return last.body.email;
      await sleep(100);
    }
    throw new Error(`email ${id} did not become ${status}; last: ${JSON.stringify(last?.body)}\n${await sys.log("delivery")}`);
  }
  /** Every page of a listing, with the pages' sizes. */
  async function allPages(query: string, limit: number, between?: () => Promise<void>): Promise<{ items: Item[]; pages: number[] }> {
    const items: Item[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await api("GET", `/v1/emails?limit=${limit}${query ? `&${query}` : ""}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const page = res.body.emails;
      expect(page.items.length).toBeLessThanOrEqual(limit);
      expect(page.hasMore).toBe(page.cursor !== null);
      items.push(...page.items);
      pages.push(page.items.length);
      cursor = page.cursor;
      if (cursor) await between?.();
    } while (cursor);
    return { items, pages };
  }
  const ids = (items: Array<{ id: string }>) => items.map((e) => e.id);

  beforeAll(async () => {
    sys = await startSystem({
      bootstrap,
      units: ["accounts", "audience", "renderer", "email", "delivery", "webhooks", "automation", "gateway"],
      env: { MAILROOM_SCHEDULER_INTERVAL_MS: "200" },
    });
    // Mailboxes at bounce.test do not exist: their emails end FAILED.
    sys.sink!.setRecipientFault((rcpt) => (rcpt.endsWith("@bounce.test") ? { code: 550, message: "5.1.1 no such user" } : undefined));
  }, 120_000);
  afterAll(async () => sys?.stop());

  describe("GET /v1/emails", () => {
    const sent: Record<string, Item> = {};
    let between = "";
    let everything: Item[] = [];

    beforeAll(async () => {
      sent.ann1 = await send("ann@log.test", { groupBy: "receipts" });
      sent.ann2 = await send("Ann Lee <ANN@Log.test>", { groupBy: "receipts" });
      sent.bob = await send("bob@log.test", { groupBy: "welcome" });
      sent.joann = await send("joann@log.test");
      await sleep(30);
      between = new Date().toISOString();
      await sleep(30);
      sent.bounce = await send("nobody@bounce.test", { groupBy: "welcome" });
      sent.carol = await send("carol@log.test", { sendAt: new Date(Date.now() + 86_400_000).toISOString() });
      sent.dan = await send("dan@log.test", { sendAt: new Date(Date.now() + 86_400_000).toISOString() });
      expect((await api("POST", `/v1/emails/${sent.dan.id}/cancel`)).body.email.status).toBe("CANCELLED");
      for (const k of ["ann1", "ann2", "bob", "joann"]) await statusBecomes(sent[k].id, "DELIVERED");
      await statusBecomes(sent.bounce.id, "FAILED");
      await send("ann@log.test", { from: "team@other.test" }, OTHER_KEY);
      everything = (await allPages("", 100)).items;
    }, 60_000);

    it("pages newest first, without duplicates or gaps, also while new emails arrive", async () => {
      expect(new Set(ids(everything))).toEqual(new Set(Object.values(sent).map((e) => e.id)));
      const created = everything.map((e) => Date.parse(e.createdAt));
      expect([...created].sort((a, b) => b - a)).toEqual(created);

      for (const limit of [1, 2, 3]) {
        const before = ids((await allPages("", 100)).items);
        const late: string[] = [];
        const { items, pages } = await allPages("", limit, async () => void late.push((await send("late@log.test")).id));
        // The same emails in the same order: the ones sent while paging are newer than the first page, so never seen.
        expect(ids(items)).toEqual(before);
        expect(pages.slice(0, -1).every((n) => n === limit)).toBe(true);
        expect(late.length).toBeGreaterThan(0);
        for (const id of late) expect(ids(items)).not.toContain(id);
      }
      // Another workspace's log is its own.
      const other = await api("GET", "/v1/emails", undefined, OTHER_KEY);
      expect(other.body.emails.items.map((e: Item) => e.id)).not.toContain(sent.ann1.id);
    });

    it("answers each item exactly as GET /v1/emails/:id does", async () => {
      const { items } = await allPages(`recipient=bob@log.test`, 10);
      expect(items).toEqual([(await api("GET", `/v1/emails/${sent.bob.id}`)).body.email]);
      expect(items[0]).toMatchObject({ status: "DELIVERED", events: { deliveredAt: expect.any(String) }, opens: 0, clicks: 0 });
    });

    it("filters by status (one or several), recipient, groupBy and creation time", async () => {
      const q = async (query: string) => ids((await allPages(query, 100)).items).sort();
      const sorted = (...keys: string[]) => keys.map((k) => sent[k].id).sort();
      expect(await q("status=DELIVERED&recipient=ann@log.test")).toEqual(sorted("ann1", "ann2"));
      expect(await q("status=FAILED,cancelled")).toEqual(sorted("bounce", "dan"));
      expect(await q("status=SCHEDULED")).toEqual(sorted("carol"));
      // The whole address, case-insensitively, whatever display name `to` had; not a part of one.
      expect(await q("recipient=ANN@LOG.TEST")).toEqual(sorted("ann1", "ann2"));
      expect(await q("recipient=ann")).toEqual([]);
      expect(await q("groupBy=receipts")).toEqual(sorted("ann1", "ann2"));
      expect(await q("groupBy=welcome&status=FAILED")).toEqual(sorted("bounce"));
      expect(await q(`until=${encodeURIComponent(between)}`)).toEqual(sorted("ann1", "ann2", "bob", "joann"));
      expect((await q(`since=${encodeURIComponent(between)}`)).filter((id) => ids(everything).includes(id))).toEqual(sorted("bounce", "carol", "dan"));
      const day = between.slice(0, 10);
      const next = new Date(Date.parse(day) + 86_400_000).toISOString().slice(0, 10);
      expect(await q(`since=${day}&until=${next}&recipient=bob@log.test`)).toEqual(sorted("bob"));
      expect(await q(`since=${next}`)).toEqual([]);
      // A tag is name:value; emails carry no tags yet, so it matches none.
      expect(await q("tag=campaign:spring")).toEqual([]);
    });

    it("records a 550 at RCPT TO as a hard bounce: bounceType hard, counted as hardBounced", async () => {
      // The sink refused nobody@bounce.test at RCPT TO with 550 (set up above).
      // The status changes first, the bounce's milestone (its time and type) right after it.
      const email = await until(async () => (await api("GET", `/v1/emails/${sent.bounce.id}`)).body.email, (e) => Boolean(e.events?.bounceType));
      expect(email).toMatchObject({ status: "FAILED", events: { bouncedAt: expect.any(String), bounceType: "hard" } });
      // Stats move with the outcome event; only the bounce was grouped "welcome" and bounced.
      const totals = await until(async () => (await api("GET", "/v1/stats/emails?groupBy=welcome")).body.stats.totals, (t) => t.bounced >= 1);
      expect(totals).toMatchObject({ bounced: 1, hardBounced: 1 });
    });

    it("refuses a bad limit, cursor, date, status or tag with 400 and a code", async () => {
      for (const [query, code, words] of [
        ["limit=0", "invalid_request", /limit/], ["limit=101", "invalid_request", /limit/], ["limit=ten", "invalid_request", /limit/],
        ["cursor=not-a-cursor", "invalid_cursor", /cursor/], ["status=SENT,BOUNCED", "invalid_request", /status/], ["status=", "invalid_request", /status/],
        ["since=yesterday", "invalid_request", /since/], ["until=2026-02-30", "invalid_request", /until/], ["since=2026-01-01T10:00:00", "invalid_request", /since/],
        [`since=2030-01-02&until=2030-01-01`, "invalid_request", /since/], ["tag=spring", "invalid_request", /tag/], ["tag=a:b:c", "invalid_request", /tag/],
        ["sort=asc", "invalid_request", /sort/],
      ] as const) {
        const res = await api("GET", `/v1/emails?${query}`);
        expect(res.status, query).toBe(400);
        expect(res.body, query).toMatchObject({ statusCode: 400, code, message: expect.stringMatching(words) });
      }
      const exported = await api("GET", "/v1/emails/export?status=NOPE");
      expect(exported.body).toMatchObject({ statusCode: 400, code: "invalid_request" });
    });
  });

  describe("GET /v1/emails/export", () => {
    it("streams the log as CSV whose rows parse back, quoting and formula escaping included", async () => {
      const tricky = [
        { to: `"Lee, Ann" <csv-1@log.test>`, subject: `=HYPERLINK("https://evil.test","click")`, groupBy: "csv,one" },
        { to: "csv-2@log.test", subject: `Say "hi", then leave`, groupBy: "csv" },
        { to: "csv-3@log.test", subject: "+1 for @everyone", groupBy: "csv", from: `"Acme, Inc." <team@acme.test>` },
        { to: "csv-4@log.test", subject: "-5% today only; ünïcödé ✓", groupBy: "csv" },
      ];
      const sentIds: string[] = [];
      for (const t of tricky) sentIds.push((await send(t.to, t)).id);
      const res = await fetch(`${sys.gatewayUrl}/v1/emails/export?recipient=csv-3@log.test`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
      const one = parseCsv(await res.text(), { columns: true }) as Array<Record<string, string>>;
      expect(one.map((r) => r.id)).toEqual([sentIds[2]]);

      const all = await fetch(`${sys.gatewayUrl}/v1/emails/export`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(all.status).toBe(200);
      expect(all.headers.get("content-disposition")).toMatch(/^attachment; filename="emails-\d{4}-\d{2}-\d{2}\.csv"$/);
      const text = await all.text();
      const table = parseCsv(text) as string[][];
      expect(table[0]).toEqual(expect.arrayContaining(["id", "createdAt", "from", "to", "subject", "status", "groupBy", "deliveredAt", "bouncedAt", "failedAt", "openedAt", "clickedAt"]));
      const rows = parseCsv(text, { columns: true }) as Array<Record<string, string>>;
      // Every email of the log, newest first, as the list answers it.
      const listed: Item[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { emails: { items: Item[]; cursor: string | null } } } = await api("GET", `/v1/emails?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
        listed.push(...page.body.emails.items);
        cursor = page.body.emails.cursor;
      } while (cursor);
      expect(rows.map((r) => r.id)).toEqual(ids(listed));
      const byId = new Map(rows.map((r) => [r.id, r]));
      // Cells a spreadsheet would run as formulas start with '; the rest is the value as sent.
      expect(byId.get(sentIds[0])).toMatchObject({ to: `"Lee, Ann" <csv-1@log.test>`, subject: `'=HYPERLINK("https://evil.test","click")`, groupBy: "csv,one" });
      expect(byId.get(sentIds[1])).toMatchObject({ subject: `Say "hi", then leave`, status: expect.stringMatching(/SENT|DELIVERED/) });
      expect(byId.get(sentIds[2])).toMatchObject({ from: `"Acme, Inc." <team@acme.test>`, subject: "'+1 for @everyone" });
      expect(byId.get(sentIds[3])).toMatchObject({ subject: "'-5% today only; ünïcödé ✓" });
      // Outcome times are on the rows once they happened.
      // (Emails delivered long before the export; the newest may have become DELIVERED while it ran.)
      const delivered = listed.filter((e) => e.status === "DELIVERED" && byId.get(e.id)!.deliveredAt);
      expect(delivered.length).toBeGreaterThanOrEqual(5);
      for (const e of delivered) expect(byId.get(e.id)!.deliveredAt).toBe((e.events as { deliveredAt: string }).deliveredAt);
      const failed = listed.find((e) => e.status === "FAILED" && e.to.endsWith("@bounce.test"))!;
      expect(byId.get(failed.id)).toMatchObject({ status: "FAILED", reason: expect.stringMatching(/550|no such user/i) });
      expect(byId.get(failed.id)!.bouncedAt || byId.get(failed.id)!.failedAt).toMatch(/^\d{4}-/);
    });
  });

  describe("one contact's data", () => {
    it("exports the contact, its properties, events and emails with their outcomes", async () => {
      const created = await api("POST", "/v1/contacts", { properties: { email: "Export.Me@log.test", firstName: "Ex", plan: "pro" } });
      expect(created.status).toBe(201);
      const id = created.body.contact.id;
      expect((await api("POST", "/v1/events", { event: "order.placed", identify: { email: "export.me@log.test" }, properties: { total: 42 } })).status).toBe(200);
      const a = await send("Export Me <export.me@log.test>", { groupBy: "receipts" });
      const b = await send("EXPORT.ME@log.test");
      await send("not.export.me@log.test");
      // The email service writes DELIVERED, then the outcome's time: wait for both, so the
      // export and the GET below read the same record.
      for (const e of [a, b]) {
        await statusBecomes(e.id, "DELIVERED");
        for (let i = 0; i < 100 && !(await api("GET", `/v1/emails/${e.id}`)).body.email?.events?.deliveredAt; i++) await sleep(100);
      }

      const res = await api("GET", `/v1/contacts/${id}/export`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        contact: { id, properties: { email: "Export.Me@log.test", firstName: "Ex", plan: "pro", status: "SUBSCRIBED" } },
        properties: [{ apiSlug: "plan", type: "STRING", value: "pro" }],
        events: [{ event: "order.placed", properties: { total: 42 } }],
        suppression: null,
      });
      expect(ids(res.body.emails).sort()).toEqual([a.id, b.id].sort());
      for (const e of res.body.emails) {
        expect(e).toEqual((await api("GET", `/v1/emails/${e.id}`)).body.email);
        expect(e).toMatchObject({ status: "DELIVERED", events: { deliveredAt: expect.any(String) } });
      }
      expect((await api("GET", `/v1/contacts/${id}/export`, undefined, OTHER_KEY)).status).toBe(404);
      expect((await api("GET", "/v1/contacts/ctc_00000000000000000000000000/export")).body).toMatchObject({ statusCode: 404, code: "contact_not_found" });
    });
  });

  describe("DELETE /v1/contacts/:id?erase=true", () => {
    it("erases the contact, its events and emails, keeps a hashed suppression, and a later send is suppressed", async () => {
      const address = "erase.me@log.test";
      // A webhook that has received the contact's CONTACT_CREATED (its body holds the address).
      const receiver = await startReceiver();
      const hook = await api("POST", "/v1/webhooks", { url: receiver.url, events: ["CONTACT_CREATED"] });
      expect(hook.status, JSON.stringify(hook.body)).toBeLessThan(300);
      const created = await api("POST", "/v1/contacts", { properties: { email: "Erase.Me@log.test", plan: "team" } });
      const id = created.body.contact.id;
      const webhooks = connectClient(WebhookService, `http://127.0.0.1:${sys.ports.webhooks}`);
      const finished = async () => (await webhooks.listContactDeliveries({ workspaceId: "ws_log", contactId: id })).deliveries.filter((d) => d.state !== DeliveryState.PENDING);
      for (let i = 0; i < 200 && (await finished()).length === 0; i++) await sleep(100);
      expect(receiver.received.map((r) => r.event.type)).toContain("CONTACT_CREATED");
      expect(await finished()).toHaveLength(1);
      await api("POST", "/v1/events", { event: "user.signup", identify: { email: address } });
      const delivered = await send(`Erase Me <${address}>`, { subject: "Your receipt" });
      await statusBecomes(delivered.id, "DELIVERED");
      // Due in three seconds: erased before its time, it is never sent.
      const dueAt = Date.now() + 3_000;
      const scheduled = await send(address, { sendAt: new Date(dueAt).toISOString() });
      const keep = await send("keep.me@log.test");

      // Without erase=true a delete stays what it was: the emails are kept (another contact shows it).
      const plain = await api("POST", "/v1/contacts", { properties: { email: "keep.me@log.test" } });
      expect((await api("DELETE", `/v1/contacts/${plain.body.contact.id}`)).body).toEqual({ isDeleted: true, contact: plain.body.contact });
      expect((await api("GET", `/v1/emails/${keep.id}`)).status).toBe(200);

      const erased = await api("DELETE", `/v1/contacts/${id}?erase=true`);
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
      expect(erased.body).toMatchObject({ isDeleted: true, contact: { id, properties: { email: "Erase.Me@log.test" } }, erased: { emails: 2, events: 1, webhookDeliveries: 1 } });
      expect(await finished()).toHaveLength(0);
      await receiver.close();

      // Nothing listable names the address any more.
      expect((await api("GET", `/v1/contacts/${id}`)).status).toBe(404);
      expect((await api("GET", `/v1/contacts/search?email=${encodeURIComponent(address)}`)).body).toEqual({ contact: null });
      expect((await api("GET", `/v1/contacts/${id}/events`)).status).toBe(404);
      for (const e of [delivered, scheduled]) expect((await api("GET", `/v1/emails/${e.id}`)).body).toMatchObject({ statusCode: 404, code: "email_not_found" });
      expect((await api("GET", `/v1/emails?recipient=${address}`)).body.emails.items).toEqual([]);
      const log = await fetch(`${sys.gatewayUrl}/v1/emails/export`, { headers: { authorization: `Bearer ${KEY}` } }).then((r) => r.text());
      expect(log.toLowerCase()).not.toContain(address);
      let cursor: string | null = null;
      do {
        const page: { body: { contacts: { items: unknown[]; cursor: string | null } } } = await api("GET", `/v1/contacts?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
        expect(JSON.stringify(page.body.contacts.items).toLowerCase()).not.toContain(address);
        cursor = page.body.contacts.cursor;
      } while (cursor);
      // The suppression list (the operator's view) does not hold the address: its hashed
      // suppression is kept, effective and unlisted (DESIGN §10.3), as the send below shows.
      const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
      const suppressions = await contacts.listSuppressions({ workspaceId: "ws_log", page: { limit: 100 } });
      expect(JSON.stringify(suppressions.suppressions.map((s) => [s.email, s.detail])).toLowerCase()).not.toContain("erase.me");
      expect(suppressions.suppressions.map((s) => s.email)).not.toContainEqual(expect.stringMatching(/^sha256:/));

      // A send to the address afterwards is suppressed: 200 with the record FAILED and why, nothing sent.
      const before = sys.sink!.messages.length;
      const again = await api("POST", "/v1/emails", raw("ERASE.ME@log.test"));
      expect(again.status).toBe(200);
      expect(again.body.email.status).toBe("FAILED");
      const record = (await api("GET", `/v1/emails/${again.body.email.id}`)).body.email;
      expect(record).toMatchObject({ status: "FAILED", reason: expect.stringMatching(/suppress/i) });
      // The scheduled email's time passed meanwhile: neither it nor the new one went out.
      await sleep(Math.max(0, dueAt + 1_500 - Date.now()));
      expect(sys.sink!.messages.slice(before).filter((m) => m.to.some((t) => t.toLowerCase() === address))).toEqual([]);
      expect(sys.sink!.messages.filter((m) => m.raw.includes(scheduled.id) || m.raw.includes(String(scheduled.messageId)))).toEqual([]);
      // The only record naming the address is the one this new request just made.
      expect(ids((await api("GET", `/v1/emails?recipient=${address}`)).body.emails.items)).toEqual([again.body.email.id]);

      // The erasure of an address without a contact: 404, nothing done; by address it works too.
      expect((await api("DELETE", `/v1/contacts/${id}?erase=true`)).body).toMatchObject({ statusCode: 404, code: "contact_not_found" });
      await api("POST", "/v1/contacts", { properties: { email: "by.address@log.test" } });
      const byAddress = await api("DELETE", `/v1/contacts/by-email/${encodeURIComponent("BY.ADDRESS@log.test")}?erase=true`);
      expect(byAddress.body).toMatchObject({ isDeleted: true, erased: { emails: 0, events: 0 } });
      expect((await api("POST", "/v1/emails", raw("by.address@log.test"))).body.email.status).toBe("FAILED");
      expect((await api("DELETE", `/v1/contacts/${id}?erase=maybe`)).body).toMatchObject({ statusCode: 400, code: "invalid_request" });
    }, 30_000);
  });
});
