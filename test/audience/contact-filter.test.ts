import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { parse } from "csv-parse/sync";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * The filter language (DESIGN §9.4) through the public API, against the real gateway,
 * accounts, audience, renderer, delivery and broadcast processes, nats-server and an SMTP sink:
 * GET /v1/contacts?filter= (with includeCount), the contacts export with a filter, 400
 * invalid_filter naming the path, one workspace never reaching another's contacts, and
 * `$engagement` after a real broadcast: delivered to every subscribed contact, opened by the
 * one who loaded the tracking pixel, clicked by the one who followed a tracked link.
 */

const flags = { broadcastEarlyAccess: true, emailApiAddon: true, verified: true };
const workspace = (id: string, contacts: unknown[]) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }],
  verifiedDomains: ["acme.test"],
  flags, monthlyLimit: 100_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }],
  contacts,
});
const person = (email: string, firstName: string, plan: string, seats: number, subscribed = true) => ({ email, firstName, subscribed, properties: { plan, seats } });

const WS = "ws_filter";
const OTHER = "ws_filter_other";
const bootstrap = {
  workspaces: [
    workspace(WS, [
      person("ann@example.test", "Ann", "pro", 5),
      person("bob@example.test", "Bob", "free", 20),
      person("cid@example.test", "Cid", "pro", 50),
      person("dee@example.test", "Dee", "pro", 1, false),
    ]),
    workspace(OTHER, [person("eve@example.test", "Eve", "pro", 5)]),
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("contact filters through the public API (real processes)", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown, ws = WS) => sys.api(method, path, { key: `mr_test_${ws}_1`, body });
  const q = (filter: unknown) => encodeURIComponent(typeof filter === "string" ? filter : JSON.stringify(filter));
  const listed = async (filter: unknown, ws = WS) => {
    const res = await api("GET", `/v1/contacts?limit=100&includeCount=true&filter=${q(filter)}`, undefined, ws);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const emails = res.body.contacts.items.map((c: { properties: { email: string } }) => c.properties.email).sort();
    expect(res.body.contacts.totalCount).toBe(emails.length);
    return emails as string[];
  };

  async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last = await read();
    while (!done(last)) {
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(last).slice(0, 600)}\n${await sys.log("audience")}`);
      await sleep(200);
      last = await read();
    }
    return last;
  }

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"] });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("lists and counts the contacts a filter selects, in the caller's workspace only", async () => {
    expect(await listed({ "properties.plan": "pro" })).toEqual(["ann@example.test", "cid@example.test", "dee@example.test"]);
    expect(await listed({ "properties.seats": { $gte: 20 }, status: "SUBSCRIBED" })).toEqual(["bob@example.test", "cid@example.test"]);
    expect(await listed({ $or: [{ firstName: { $startsWith: "a" } }, { email: { $contains: "DEE" } }] })).toEqual(["ann@example.test", "dee@example.test"]);
    expect(await listed({ $not: { "properties.plan": "pro" } })).toEqual(["bob@example.test"]);
    expect(await listed({ createdAt: { $gte: { $ago: "P1D" } }, "properties.seats": { $lt: 10 } })).toEqual(["ann@example.test", "dee@example.test"]);
    expect(await listed({})).toHaveLength(4);
    // The other workspace: its own contact only, whatever the filter.
    expect(await listed({ "properties.plan": "pro" }, OTHER)).toEqual(["eve@example.test"]);
    expect(await listed({ email: { $endsWith: "@example.test" } }, OTHER)).toEqual(["eve@example.test"]);
    // With the other parameters and paging.
    const first = await api("GET", `/v1/contacts?limit=1&sort=createdAt.asc&status=SUBSCRIBED&filter=${q({ "properties.plan": "pro" })}`);
    expect(first.body.contacts).toMatchObject({ items: [{ properties: { email: "ann@example.test" } }], hasMore: true });
    const second = await api("GET", `/v1/contacts?limit=1&sort=createdAt.asc&status=SUBSCRIBED&filter=${q({ "properties.plan": "pro" })}&cursor=${first.body.contacts.cursor}`);
    expect(second.body.contacts).toMatchObject({ items: [{ properties: { email: "cid@example.test" } }], hasMore: false });
  });

  it("answers 400 invalid_filter naming the path, for the listing and the export", async () => {
    const cases: [unknown, string][] = [
      ["{not json", "filter: not valid JSON"],
      [{ $and: [{ firstName: "Ann" }, { "properties.nope": 1 }] }, 'filter.$and[1].properties.nope: unknown property "nope"'],
      [{ "properties.seats": "many" }, "filter.properties.seats: "],
      [{ createdAt: { $gt: { $ago: "30 days" } } }, "filter.createdAt.$gt.$ago: "],
      [{ firstName: { $like: "A" } }, 'filter.firstName.$like: unknown operator "$like"'],
      [{ phone2: "1" }, 'filter.phone2: unknown field "phone2"'],
      [{ groups: "nope" }, 'filter.groups: unknown group "nope"'],
      [{ $engagement: { event: "read" } }, "filter.$engagement.event: "],
    ];
    for (const [filter, message] of cases) {
      for (const path of [`/v1/contacts?filter=${q(filter)}`, `/v1/contacts/export?filter=${q(filter)}`]) {
        const res = await api("GET", path);
        expect([path, res.status, res.body.code]).toEqual([path, 400, "invalid_filter"]);
        expect(res.body.message).toContain(message);
      }
    }
  });

  it("exports only the contacts the filter selects", async () => {
    const res = await fetch(`${sys.gatewayUrl}/v1/contacts/export?filter=${q({ "properties.plan": "pro", status: "SUBSCRIBED" })}`, {
      headers: { authorization: `Bearer mr_test_${WS}_1` },
    });
    expect(res.status).toBe(200);
    const rows = parse(await res.text(), { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => r.email).sort()).toEqual(["ann@example.test", "cid@example.test"]);
    expect(rows.find((r) => r.email === "cid@example.test")).toMatchObject({ plan: "pro", seats: "50", status: "SUBSCRIBED" });
  });

  it("$engagement selects the contacts a real broadcast was delivered to, opened by and clicked by", async () => {
    const created = await api("POST", "/v1/broadcasts", {
      name: "Engage", subject: "Engage {{firstName}} #engage", fromEmail: "news@acme.test", fromName: "Acme",
      html: `<html><body><p>Hi {{firstName}}</p><p><a href="https://acme.test/offer">Offer</a></p></body></html>`,
      audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    expect((await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" })).status).toBe(200);
    await until("COMPLETED", async () => (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast.status, (s) => s === "COMPLETED");

    const delivered = { $engagement: { event: "delivered", broadcastId: id } };
    expect(await until("delivered recorded", () => listed(delivered), (e) => e.length === 3)).toEqual(["ann@example.test", "bob@example.test", "cid@example.test"]);

    const mailTo = async (email: string) => {
      const raw = sys.sink!.messages.find((m) => m.raw.includes("#engage") && m.to.includes(email))!.raw;
      return (await PostalMime.parse(raw)).html!;
    };
    const pixel = new RegExp(`${sys.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/t/o/[^'")\\s]+`).exec(await mailTo("ann@example.test"))![0];
    expect((await fetch(pixel)).status).toBe(200);
    const link = new RegExp(`${sys.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/t/c/[^'"\\s]+`).exec(await mailTo("bob@example.test"))![0];
    expect((await fetch(link, { redirect: "manual" })).status).toBe(302);

    expect(await until("opened recorded", () => listed({ $engagement: { event: "opened", broadcastId: id } }), (e) => e.length > 0)).toEqual(["ann@example.test"]);
    expect(await until("clicked recorded", () => listed({ $engagement: { event: "clicked" } }), (e) => e.length > 0)).toEqual(["bob@example.test"]);
    expect(await listed({ $engagement: { event: "opened", since: { $ago: "PT1H" } } })).toEqual(["ann@example.test"]);
    expect(await listed({ $engagement: { event: "opened", min: 2 } })).toEqual([]);
    // Re-engagement: delivered but never opened.
    expect(await listed({ ...delivered, $not: { $engagement: { event: "opened" } } })).toEqual(["bob@example.test", "cid@example.test"]);
    // The other workspace has no engagement with this broadcast.
    expect(await listed({ $engagement: { event: "delivered", broadcastId: id } }, OTHER)).toEqual([]);
    // Deleting a contact removes its engagement records with it.
    const ann = (await api("GET", "/v1/contacts/search?email=ann@example.test")).body.contact;
    expect((await api("DELETE", `/v1/contacts/${ann.id}`)).status).toBe(200);
    expect(await until("ann gone", () => listed({ $engagement: { event: "opened" } }), (e) => e.length === 0)).toEqual([]);
  }, 90_000);
});
