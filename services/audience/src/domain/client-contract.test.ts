import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory, snapshot } from "../testing.js";
import type { ContactEvent } from "@mailroom/records/model.js";
import { slugFromDisplayName } from "./properties.js";
import { parseEventTime } from "./events.js";

/** The directory's part of the official client's contract (spec/sdk-wire-contract.md §4-§8). */

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;
const messageOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.message;

async function setup(published: ContactEvent[] = []) {
  const dir = await memoryDirectory({ publishEvent: (e) => published.push(e) });
  await dir.workspaces.create({ id: "ws_a", name: "A" });
  await dir.workspaces.create({ id: "ws_b", name: "B" });
  return dir;
}

describe("contact statuses and sources", () => {
  it("defaults to SUBSCRIBED from the API; audiences (subscribedOnly) are the SUBSCRIBED contacts", async () => {
    const dir = await setup();
    await dir.contacts.upsert("ws_a", { email: "a@x.test" });
    await dir.contacts.upsert("ws_a", { email: "b@x.test", status: "OPT_IN_PENDING" });
    await dir.contacts.upsert("ws_a", { email: "c@x.test", properties: { status: "BANNED" } });
    await dir.contacts.upsert("ws_a", { email: "d@x.test", textProperties: { status: "archived" } });
    await dir.contacts.upsert("ws_a", { email: "e@x.test", subscribed: false });
    const byEmail = Object.fromEntries((await dir.contacts.list("ws_a")).items.map((c) => [c.email, c.status]));
    expect(byEmail).toEqual({ "a@x.test": "SUBSCRIBED", "b@x.test": "OPT_IN_PENDING", "c@x.test": "BANNED", "d@x.test": "ARCHIVED", "e@x.test": "UNSUBSCRIBED" });
    const audience: string[] = [];
    for await (const page of dir.contacts.stream("ws_a", { subscribedOnly: true })) audience.push(...page.map((c) => c.email));
    expect(audience).toEqual(["a@x.test"]);
    expect(await dir.contacts.count("ws_a", { status: "BANNED" })).toBe(1);
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "f@x.test", status: "GONE" }))).toBe("invalid_contact");
  });

  it("a transactional send's contact is OPT_IN_PENDING (no audience) until the API or an import subscribes it", async () => {
    const dir = await setup();
    const { contact } = await dir.contacts.upsert("ws_a", { email: "t@x.test", source: "TRANSACTIONAL_EMAIL", properties: { plan: "pro" } }, { createMissingProperties: true });
    expect(contact).toMatchObject({ status: "OPT_IN_PENDING", source: "TRANSACTIONAL_EMAIL", properties: { plan: "pro" } });
    // Another transactional send leaves it pending.
    await dir.contacts.upsert("ws_a", { email: "t@x.test", source: "TRANSACTIONAL_EMAIL", properties: { plan: "team" } }, { createMissingProperties: true });
    expect((await dir.contacts.get("ws_a", "t@x.test")).status).toBe("OPT_IN_PENDING");
    // The owner adds it through the API: subscribed; the source stays where it came from.
    await dir.contacts.upsert("ws_a", { email: "t@x.test", source: "PUBLIC_API" });
    expect(await dir.contacts.get("ws_a", "t@x.test")).toMatchObject({ status: "SUBSCRIBED", source: "TRANSACTIONAL_EMAIL" });
    // A send's contactProperties cannot set a status.
    await dir.contacts.upsert("ws_a", { email: "t2@x.test", source: "TRANSACTIONAL_EMAIL", properties: { status: "SUBSCRIBED" } });
    expect((await dir.contacts.get("ws_a", "t2@x.test")).status).toBe("OPT_IN_PENDING");
    // An explicit status on an upsert wins; an existing SUBSCRIBED contact stays so on a send.
    await dir.contacts.upsert("ws_a", { email: "t@x.test", source: "TRANSACTIONAL_EMAIL" }, { createMissingProperties: true });
    expect((await dir.contacts.get("ws_a", "t@x.test")).status).toBe("SUBSCRIBED");
  });

  it("keeps built-in properties (checked) next to custom ones; null clears one", async () => {
    const dir = await setup();
    const { contact } = await dir.contacts.upsert("ws_a", {
      email: "b@x.test",
      properties: { firstName: "Bo", city: "Oslo", countryCode: "no", birthday: "1990-02-28", phone: "+47 1234", language: "nb", avatarUrl: "https://x.test/a.png", timezone: "Europe/Oslo" },
    });
    expect(contact).toMatchObject({ firstName: "Bo", city: "Oslo", countryCode: "NO", birthday: "1990-02-28", phone: "+47 1234", language: "nb", timezone: "Europe/Oslo", properties: {} });
    const cleared = await dir.contacts.update("ws_a", { email: "b@x.test", properties: { city: null } }, contact._id);
    expect(cleared.city).toBe("");
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "b@x.test", properties: { countryCode: "NOR" } }))).toBe("invalid_contact");
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "b@x.test", properties: { birthday: "1990-02-30" } }))).toBe("invalid_contact");
  });

  it("updates and deletes by id within the workspace only; delete answers the contact as it was", async () => {
    const dir = await setup();
    const { contact } = await dir.contacts.upsert("ws_a", { email: "i@x.test" });
    expect(await codeOf(dir.contacts.update("ws_b", { email: "", properties: { firstName: "X" } }, contact._id))).toBe("contact_not_found");
    expect(await codeOf(dir.contacts.update("ws_a", { email: "other@x.test" }, contact._id))).toBe("invalid_contact");
    expect((await dir.contacts.update("ws_a", { email: "", properties: { firstName: "Ida" } }, contact._id)).firstName).toBe("Ida");
    expect(await codeOf(dir.contacts.delete("ws_b", "", contact._id))).toBe("contact_not_found");
    expect(await dir.contacts.delete("ws_a", "", contact._id)).toMatchObject({ _id: contact._id, firstName: "Ida" });
    expect(await dir.contacts.findOne("ws_a", "i@x.test")).toBeNull();
  });

  it("lists newest first, searches email and names, filters by status and counts", async () => {
    const dir = await setup();
    for (const [email, firstName] of [["ann@x.test", "Ann"], ["bob@x.test", "Robert"], ["cy@x.test", "Cyrus"]]) {
      await dir.contacts.upsert("ws_a", { email, firstName });
    }
    await dir.contacts.upsert("ws_a", { email: "dee@x.test", status: "UNSUBSCRIBED" });
    expect((await dir.contacts.list("ws_a", { newestFirst: true, limit: 2 })).items.map((c) => c.email)).toEqual(["dee@x.test", "cy@x.test"]);
    const second = await dir.contacts.list("ws_a", { newestFirst: true, limit: 2, cursor: (await dir.contacts.list("ws_a", { newestFirst: true, limit: 2 })).nextCursor });
    expect(second.items.map((c) => c.email)).toEqual(["bob@x.test", "ann@x.test"]);
    expect((await dir.contacts.list("ws_a", { search: "ROB" })).items.map((c) => c.email)).toEqual(["bob@x.test"]);
    expect((await dir.contacts.list("ws_a", { search: "a.*" })).items).toEqual([]); // literal text, not a pattern
    expect((await dir.contacts.list("ws_a", { status: "UNSUBSCRIBED" })).items.map((c) => c.email)).toEqual(["dee@x.test"]);
    expect(await dir.contacts.count("ws_a", { search: "x.test" })).toBe(4);
  });

  it("batch: all or nothing writes nothing when one item is invalid; otherwise answers each contact", async () => {
    const dir = await setup();
    const before = await snapshot(dir);
    const refused = await dir.contacts.batchUpsert("ws_a", [{ email: "ok@x.test" }, { email: "nope" }], { allOrNothing: true });
    expect(refused.map((r) => [r.ok, r.error?.code])).toEqual([[false, undefined], [false, "invalid_email"]]);
    expect(await snapshot(dir)).toEqual(before);
    const written = await dir.contacts.batchUpsert("ws_a", [{ email: "ok@x.test", source: "CSV_IMPORT", createdAt: new Date("2020-01-01T00:00:00Z") }, { email: "nope" }]);
    expect(written[0]).toMatchObject({ ok: true, created: true, contact: { email: "ok@x.test", source: "CSV_IMPORT" } });
    expect(written[0].contact!.createdAt.toISOString()).toBe("2020-01-01T00:00:00.000Z");
    expect(written[1]).toMatchObject({ ok: false, error: { code: "invalid_email" } });
  });
});

describe("custom properties of the client's types", () => {
  it("derives unique API slugs from display names", async () => {
    expect(slugFromDisplayName("Company size (employees)")).toBe("companySizeEmployees");
    expect(slugFromDisplayName("  Plan ")).toBe("plan");
    expect(slugFromDisplayName("2nd address")).toBe("p2ndAddress");
    expect(slugFromDisplayName("Ünïcode näme")).toBe("unicodeName");
    const dir = await setup();
    const a = await dir.properties.create("ws_a", { displayName: "Plan", type: "STRING", description: "Billing plan" });
    const b = await dir.properties.create("ws_a", { displayName: "plan", type: "NUMBER" });
    const c = await dir.properties.create("ws_a", { displayName: "City", type: "STRING" }); // "city" is a built-in
    expect([a.slug, b.slug, c.slug]).toEqual(["plan", "plan2", "city2"]);
    expect(a).toMatchObject({ id: expect.stringMatching(/^cpr_/), displayName: "Plan", description: "Billing plan", type: "string", builtIn: false });
    expect(await codeOf(dir.properties.create("ws_a", { displayName: "!!!", type: "STRING" }))).toBe("invalid_property");
  });

  it("checks SELECT and MULTI_SELECT values against the options; an array replaces, { add, remove } edits", async () => {
    const dir = await setup();
    const tier = await dir.properties.create("ws_a", { displayName: "Tier", type: "SELECT", options: ["gold", "silver"] });
    await dir.properties.create("ws_a", { displayName: "Tags", type: "MULTI_SELECT", options: ["a", "b", "c"] });
    expect(tier.options?.map((o) => [o.value, o.displayName])).toEqual([["gold", "gold"], ["silver", "silver"]]);
    expect(tier.options?.[0]).toMatchObject({ id: expect.stringMatching(/^opt_/), color: expect.any(String) });
    expect(await codeOf(dir.properties.create("ws_a", { displayName: "Empty", type: "SELECT" }))).toBe("invalid_property");
    const { contact } = await dir.contacts.upsert("ws_a", { email: "m@x.test", properties: { tier: "gold", tags: ["a", "b"] } });
    expect(contact.properties).toEqual({ tier: "gold", tags: ["a", "b"] });
    expect((await dir.contacts.update("ws_a", { email: "m@x.test", properties: { tags: { add: ["c"], remove: ["a"] } } })).properties.tags).toEqual(["b", "c"]);
    expect((await dir.contacts.update("ws_a", { email: "m@x.test", properties: { tags: ["a"] } })).properties.tags).toEqual(["a"]);
    expect(await messageOf(dir.contacts.upsert("ws_a", { email: "m@x.test", properties: { tier: "bronze" } }))).toMatch(/^Property "tier" is of type SELECT; "bronze" is not one of its options \(gold, silver\)/);
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "m@x.test", properties: { tags: ["z"] } }))).toBe("invalid_property_value");
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "m@x.test", properties: { tags: { add: ["z"] } } }))).toBe("invalid_property_value");
  });

  it("STRING holds at most 255 characters; DATE must be an ISO date", async () => {
    const dir = await setup();
    await dir.properties.create("ws_a", { displayName: "Note", type: "STRING" });
    await dir.properties.create("ws_a", { displayName: "Since", type: "DATE" });
    expect((await dir.contacts.upsert("ws_a", { email: "s@x.test", properties: { note: "x".repeat(255) } })).contact.properties.note).toHaveLength(255);
    expect(await messageOf(dir.contacts.upsert("ws_a", { email: "s@x.test", properties: { note: "x".repeat(256) } }))).toMatch(/^Property "note" is of type STRING; .* is longer than 255 characters/);
    expect(await messageOf(dir.contacts.upsert("ws_a", { email: "s@x.test", properties: { since: "yesterday" } }))).toMatch(/^Property "since" is of type DATE/);
  });

  it("updates display name and description by id; built-ins and unknown ids are refused", async () => {
    const dir = await setup();
    const p = await dir.properties.create("ws_a", { displayName: "Plan", type: "STRING" });
    expect(await dir.properties.update("ws_a", p.id, { displayName: "Billing plan", description: "d" })).toMatchObject({ id: p.id, slug: "plan", displayName: "Billing plan", description: "d" });
    expect(await codeOf(dir.properties.update("ws_b", p.id, { displayName: "x" }))).toBe("property_not_found");
    expect(await codeOf(dir.properties.update("ws_a", "email", { displayName: "x" }))).toBe("invalid_property");
    expect(await codeOf(dir.properties.update("ws_a", p.id, { displayName: " " }))).toBe("invalid_property");
  });
});

describe("API key roles", () => {
  it("EDITOR is api_user (implies api_read), VIEWER is api_read only; update and revoke answer the key", async () => {
    const dir = await setup();
    const editor = await dir.keys.create("ws_a", { name: "ci", role: "EDITOR" });
    const viewer = await dir.keys.create("ws_a", { name: "dash", role: "VIEWER" });
    expect((await dir.keys.authenticate(editor.plain, ["api_read"])).scopes).toEqual(["api_user", "api_read"]);
    expect((await dir.keys.authenticate(viewer.plain, ["api_read"])).scopes).toEqual(["api_read"]);
    expect(await codeOf(dir.keys.authenticate(viewer.plain, ["api_user"]))).toBe("insufficient_scope");
    expect(await codeOf(dir.keys.create("ws_a", { role: "OWNER" }))).toBe("invalid_role");
    const promoted = await dir.keys.update("ws_a", viewer.key._id, { role: "EDITOR", name: "dash 2" });
    expect(promoted).toMatchObject({ name: "dash 2", scopes: ["api_user"] });
    expect(await codeOf(dir.keys.update("ws_b", viewer.key._id, { name: "x" }))).toBe("api_key_not_found");
    expect((await dir.keys.revoke("ws_a", viewer.key._id)).revokedAt).toBeInstanceOf(Date);
    expect(await codeOf(dir.keys.authenticate(viewer.plain))).toBe("unauthorized");
  });

  it("pages keys by creation time from startAt", async () => {
    let t = Date.parse("2026-01-01T00:00:00Z");
    const dir = await memoryDirectory({ now: () => new Date((t += 1000)) });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    for (let i = 0; i < 5; i++) await dir.keys.create("ws_a", { name: `k${i}`, role: "VIEWER" });
    const first = await dir.keys.page("ws_a", { limit: 2 });
    expect(first.items.map((k) => k.name)).toEqual(["k4", "k3"]);
    expect(first.hasMore).toBe(true);
    const next = await dir.keys.page("ws_a", { limit: 2, startAt: first.nextStartAt });
    expect(next.items.map((k) => k.name)).toEqual(["k2", "k1"]);
    expect((await dir.keys.page("ws_a", { limit: 10, newestFirst: false })).items.map((k) => k.name)).toEqual(["k0", "k1", "k2", "k3", "k4"]);
  });
});

describe("template senders", () => {
  it("checks fromEmail against verified senders when saved; keeps fromName, replyTo, status", async () => {
    const dir = await setup();
    await dir.senders.markDomainVerified("ws_a", "acme.test");
    const base = { name: "welcome", subject: "Hi", html: "<p>hi</p>" };
    expect(await codeOf(dir.templates.create("ws_a", { ...base, fromEmail: "me@gmail.test" }))).toBe("invalid_from");
    const t = await dir.templates.create("ws_a", { ...base, fromEmail: "hello@acme.test", fromName: "Acme", replyTo: [{ email: "help@acme.test", name: "Help" }] });
    expect(t).toMatchObject({ fromEmail: "hello@acme.test", fromName: "Acme", replyTo: [{ email: "help@acme.test", name: "Help" }], status: "ACTIVE" });
    expect((await dir.templates.getById("ws_a", t._id)).name).toBe("welcome");
    expect(await codeOf(dir.templates.getById("ws_b", t._id))).toBe("template_not_found");
    await dir.templates.create("ws_a", { ...base, name: "draft", status: "DRAFT" });
    expect((await dir.templates.list("ws_a", { status: "DRAFT" })).items.map((x) => x.name)).toEqual(["draft"]);
    expect((await dir.templates.list("ws_a", { status: "ACTIVE" })).items.map((x) => x.name)).toEqual(["welcome"]);
    expect((await dir.templates.list("ws_a", { newestFirst: true })).items.map((x) => x.name)).toEqual(["draft", "welcome"]);
  });
});

describe("contact events", () => {
  it("stores each event once per messageId, writes traits onto the contact and announces it", async () => {
    const published: ContactEvent[] = [];
    const dir = await setup(published);
    const [first] = await dir.events.record("ws_a", [{ name: "user.signup", email: "E@x.test", traits: { firstName: "Eve", plan: "pro" }, properties: { via: "ads" }, messageId: "m1", timestamp: 1_700_000_000 }]);
    expect(first).toMatchObject({ index: 0, messageId: "m1", status: "accepted" });
    expect(first.event!.timestamp.toISOString()).toBe("2023-11-14T22:13:20.000Z");
    expect(await dir.contacts.get("ws_a", "e@x.test")).toMatchObject({ firstName: "Eve", status: "SUBSCRIBED", properties: { plan: "pro" } });
    const again = await dir.events.record("ws_a", [
      { name: "user.signup", email: "e@x.test", messageId: "m1" },
      { name: "bad name!", email: "e@x.test" },
      { name: "order:paid", email: "e@x.test", timestamp: "2026-01-02T03:04:05+01:00" },
      { name: "x", email: "not an address" },
    ]);
    expect(again.map((r) => [r.index, r.status, r.error?.code])).toEqual([[0, "duplicate", undefined], [1, "failed", "invalid_event"], [2, "accepted", undefined], [3, "failed", "invalid_email"]]);
    expect(again[1].messageId).toMatch(/^[0-9a-f-]{36}$/); // generated
    expect(published.map((e) => e.name)).toEqual(["user.signup", "order:paid"]);
    const contact = await dir.contacts.get("ws_a", "e@x.test");
    expect((await dir.events.list("ws_a", contact._id)).items.map((e) => e.name)).toEqual(["order:paid", "user.signup"]);
    expect(await codeOf(dir.events.list("ws_b", contact._id))).toBe("contact_not_found");
    // Another workspace may reuse the messageId.
    expect((await dir.events.record("ws_b", [{ name: "user.signup", email: "e@x.test", messageId: "m1" }]))[0].status).toBe("accepted");
  });

  it("reads ISO and Unix timestamps (seconds, milliseconds) and refuses others", () => {
    const now = new Date("2026-05-01T00:00:00Z");
    expect(parseEventTime(undefined, now)).toBe(now);
    expect(parseEventTime(1_700_000_000_000, now).toISOString()).toBe("2023-11-14T22:13:20.000Z");
    expect(parseEventTime("1700000000", now).toISOString()).toBe("2023-11-14T22:13:20.000Z");
    expect(() => parseEventTime("soon", now)).toThrow(/timestamp/);
  });
});
