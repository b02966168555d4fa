import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Collection, Doc, Store } from "@mailroom/store/port.js";
import { memoryDirectory, snapshot, storeDirectory } from "../testing.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

async function setup() {
  const dir = await memoryDirectory();
  await dir.workspaces.create({ id: "ws_a", name: "A" });
  await dir.workspaces.create({ id: "ws_b", name: "B" });
  await dir.properties.create("ws_a", { slug: "plan", type: "string" });
  await dir.properties.create("ws_a", { slug: "seats", type: "number" });
  await dir.properties.create("ws_a", { slug: "vip", type: "boolean" });
  await dir.properties.create("ws_a", { slug: "renewsAt", type: "date" });
  return dir;
}

describe("contact properties", () => {
  it("lists built-ins then custom properties; refuses unknown types, bad and reserved slugs", async () => {
    const dir = await setup();
    const list = await dir.properties.list("ws_a");
    expect(list.slice(0, 3)).toMatchObject([
      { id: "firstName", slug: "firstName", type: "string", builtIn: true, displayName: "First Name" },
      { slug: "lastName", type: "string", builtIn: true },
      { slug: "email", type: "string", builtIn: true },
    ]);
    expect(list.filter((p) => p.builtIn).map((p) => p.slug)).toEqual([
      "firstName", "lastName", "email", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "status", "timezone",
    ]);
    expect(list.filter((p) => !p.builtIn).map((p) => `${p.slug}:${p.type}`).sort()).toEqual(["plan:string", "renewsAt:date", "seats:number", "vip:boolean"]);
    const before = await snapshot(dir);
    expect(await codeOf(dir.properties.create("ws_a", { slug: "score", type: "float" }))).toBe("invalid_property_type");
    expect(await codeOf(dir.properties.create("ws_a", { slug: "score", type: undefined }))).toBe("invalid_property_type");
    expect(await codeOf(dir.properties.create("ws_a", { slug: "first name", type: "string" }))).toBe("invalid_property_slug");
    expect(await codeOf(dir.properties.create("ws_a", { slug: "unsubscribeUrl", type: "string" }))).toBe("reserved_property_slug");
    expect(await codeOf(dir.properties.create("ws_a", { slug: "plan", type: "number" }))).toBe("property_exists");
    expect(await snapshot(dir)).toEqual(before);
  });
});

describe("contacts", () => {
  it("creates with typed properties and refuses a duplicate email (any case) with 409", async () => {
    const dir = await setup();
    const c = await dir.contacts.create("ws_a", {
      email: "Ann@Example.TEST", firstName: "Ann", timezone: "Asia/Tokyo",
      properties: { plan: "pro", seats: 3, vip: true, renewsAt: "2026-05-01" },
    });
    expect(c).toMatchObject({ email: "Ann@example.test", emailLower: "ann@example.test", firstName: "Ann", lastName: "", status: "SUBSCRIBED", source: "PUBLIC_API", timezone: "Asia/Tokyo" });
    expect(c._id).toMatch(/^ctc_[0-9a-z]{26}$/);
    expect(c.properties).toEqual({ plan: "pro", seats: 3, vip: true, renewsAt: "2026-05-01T00:00:00.000Z" });
    const before = await snapshot(dir);
    expect(await codeOf(dir.contacts.create("ws_a", { email: "ANN@example.test" }))).toBe("contact_exists");
    expect(await snapshot(dir)).toEqual(before);
  });

  it("refuses invalid addresses, unknown properties, wrong value types and bad time zones, writing nothing", async () => {
    const dir = await setup();
    await dir.contacts.create("ws_a", { email: "ann@example.test", properties: { plan: "free" } });
    const before = await snapshot(dir);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ email: "not-an-email" }, "invalid_email"],
      [{ email: "Ann <ann@example.test>" }, "invalid_email"],
      [{ email: "bob@example.test", properties: { favouriteColour: "red" } }, "unknown_contact_property"],
      [{ email: "bob@example.test", properties: { seats: "three" } }, "invalid_property_value"],
      [{ email: "bob@example.test", properties: { vip: "yes" } }, "invalid_property_value"],
      [{ email: "bob@example.test", properties: { renewsAt: "next tuesday" } }, "invalid_property_value"],
      [{ email: "bob@example.test", properties: { plan: { nested: true } } }, "invalid_property_value"],
      [{ email: "bob@example.test", timezone: "Mars/Olympus" }, "invalid_timezone"],
      [{ email: "bob@example.test", firstName: "Bob\r\nBcc: x@y.test" }, "invalid_contact"],
    ];
    for (const [input, code] of cases) {
      expect(await codeOf(dir.contacts.create("ws_a", input as never)), JSON.stringify(input)).toBe(code);
      expect(await codeOf(dir.contacts.upsert("ws_a", input as never)), JSON.stringify(input)).toBe(code);
    }
    // The same bad values on an existing contact leave it untouched too.
    expect(await codeOf(dir.contacts.update("ws_a", { email: "ann@example.test", firstName: "Ann", properties: { seats: "x" } }))).toBe("invalid_property_value");
    const err = await dir.contacts.create("ws_a", { email: "bob@example.test", properties: { a1: 1, b2: 2 } }).catch((e) => e);
    expect(errorInfoOf(err)?.message).toMatch(/a1, b2/);
    expect(await snapshot(dir)).toEqual(before);
  });

  it("upserts: creates, then merges fields and properties; null removes a property", async () => {
    const dir = await setup();
    const first = await dir.contacts.upsert("ws_a", { email: "cy@example.test", properties: { plan: "free", seats: 1 } });
    expect(first.created).toBe(true);
    const second = await dir.contacts.upsert("ws_a", { email: "CY@example.test", lastName: "Young", properties: { plan: "pro", seats: null } });
    expect(second.created).toBe(false);
    expect(second.contact).toMatchObject({ _id: first.contact._id, lastName: "Young", properties: { plan: "pro" } });
    expect(second.contact.properties).not.toHaveProperty("seats");
    // No change → no write.
    const again = await dir.contacts.upsert("ws_a", { email: "cy@example.test", properties: { plan: "pro" } });
    expect(again.contact.updatedAt).toEqual(second.contact.updatedAt);
  });

  it("creates missing properties from contactProperties when asked (transactional sends)", async () => {
    const dir = await setup();
    const { contact } = await dir.contacts.upsert(
      "ws_a",
      { email: "dee@example.test", properties: { firstName: "Dee", orderCount: 4, beta: true, source: "checkout", plan: "pro" } },
      { createMissingProperties: true },
    );
    expect(contact).toMatchObject({ firstName: "Dee", properties: { orderCount: 4, beta: true, source: "checkout", plan: "pro" } });
    const types = Object.fromEntries((await dir.properties.list("ws_a")).map((p) => [p.slug, p.type]));
    expect(types).toMatchObject({ orderCount: "number", beta: "boolean", source: "string" });
    // Existing properties keep their type: a wrong type is still refused.
    expect(await codeOf(dir.contacts.upsert("ws_a", { email: "dee@example.test", properties: { orderCount: "many" } }, { createMissingProperties: true }))).toBe("invalid_property_value");
  });

  it("pages with a cursor and streams in bounded batches", async () => {
    const dir = await setup();
    const emails = Array.from({ length: 23 }, (_, i) => `user${String(i).padStart(2, "0")}@example.test`);
    for (const email of emails) await dir.contacts.create("ws_a", { email, subscribed: !email.endsWith("3@example.test") });
    await dir.contacts.create("ws_b", { email: "other@b.test" });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await dir.contacts.list("ws_a", { limit: 5, cursor });
      expect(page.items.length).toBeLessThanOrEqual(5);
      seen.push(...page.items.map((c) => c.email));
      cursor = page.hasMore ? page.nextCursor : undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(emails);
    const batches: number[] = [];
    const streamed: string[] = [];
    for await (const batch of dir.contacts.stream("ws_a", { batchSize: 10, subscribedOnly: true })) {
      batches.push(batch.length);
      streamed.push(...batch.map((c) => c.email));
    }
    expect(batches).toEqual([10, 10, 1]);
    expect(streamed).toEqual(emails.filter((e) => !e.endsWith("3@example.test")));
    expect(await codeOf(dir.contacts.list("ws_a", { cursor: "'; drop" }))).toBe("invalid_cursor");
    expect(await codeOf(dir.contacts.list("ws_a", { limit: 100_000 }))).toBe("invalid_request");
  });

  it("keeps workspaces apart: B cannot read, change or delete A's contacts, and A's cursor shows B nothing", async () => {
    const dir = await setup();
    const ann = await dir.contacts.create("ws_a", { email: "ann@example.test" });
    expect(await codeOf(dir.contacts.get("ws_b", "ann@example.test"))).toBe("contact_not_found");
    expect(await codeOf(dir.contacts.getById("ws_b", ann._id))).toBe("contact_not_found");
    expect(await codeOf(dir.contacts.update("ws_b", { email: "ann@example.test", firstName: "X" }))).toBe("contact_not_found");
    expect(await codeOf(dir.contacts.delete("ws_b", "ann@example.test"))).toBe("contact_not_found");
    expect((await dir.contacts.list("ws_b")).items).toEqual([]);
    expect((await dir.contacts.list("ws_b", { cursor: "ctc_00000000000000000000000000" })).items).toEqual([]);
    // The same email is a separate contact in B.
    const bAnn = await dir.contacts.create("ws_b", { email: "ann@example.test", firstName: "B-Ann" });
    expect(bAnn._id).not.toBe(ann._id);
    expect((await dir.contacts.get("ws_a", "ann@example.test")).firstName).toBe("");
  });

  it("batch upsert reports each item with its own error and applies the valid ones", async () => {
    const dir = await setup();
    const results = await dir.contacts.batchUpsert("ws_a", [
      { email: "ok1@example.test", properties: { seats: 2 } },
      { email: "broken" },
      { email: "ok2@example.test", properties: { colour: "red" } },
      { email: "OK1@example.test" },
      { email: "ok3@example.test" },
    ]);
    expect(results.map((r) => [r.index, r.ok, r.error?.code ?? ""])).toEqual([
      [0, true, ""], [1, false, "invalid_email"], [2, false, "unknown_contact_property"], [3, false, "duplicate_contact"], [4, true, ""],
    ]);
    expect((await dir.contacts.list("ws_a")).items.map((c) => c.email)).toEqual(["ok1@example.test", "ok3@example.test"]);
  });

  it("does not let an import resubscribe someone who unsubscribed; an explicit update does", async () => {
    const dir = await setup();
    await dir.contacts.create("ws_a", { email: "eve@example.test" });
    await dir.suppressions.add("ws_a", "Eve@Example.test", "unsubscribed", "link");
    expect((await dir.contacts.get("ws_a", "eve@example.test")).status).toBe("UNSUBSCRIBED");
    await dir.contacts.upsert("ws_a", { email: "eve@example.test", subscribed: true });
    await dir.contacts.upsert("ws_a", { email: "eve@example.test", status: "SUBSCRIBED" });
    expect((await dir.contacts.get("ws_a", "eve@example.test")).status).toBe("UNSUBSCRIBED");
    expect(await dir.suppressions.check("ws_a", ["eve@example.test"])).toHaveLength(1);
    await dir.contacts.update("ws_a", { email: "eve@example.test", status: "SUBSCRIBED" });
    expect((await dir.contacts.get("ws_a", "eve@example.test")).status).toBe("SUBSCRIBED");
    expect(await dir.suppressions.check("ws_a", ["eve@example.test"])).toHaveLength(0);
  });
});

describe("batch upsert in one store write", () => {
  it("creates and updates in one batch with the upsert's status rules", async () => {
    const dir = await setup();
    await dir.contacts.create("ws_a", { email: "eve@example.test" });
    await dir.suppressions.add("ws_a", "eve@example.test", "unsubscribed", "link");
    await dir.contacts.upsert("ws_a", { email: "tx@example.test", source: "TRANSACTIONAL_EMAIL" });
    await dir.contacts.create("ws_a", { email: "same@example.test", firstName: "Same" });
    const before = await dir.contacts.get("ws_a", "same@example.test");
    const results = await dir.contacts.batchUpsert("ws_a", [
      { email: "new@example.test", firstName: "New", properties: { seats: 3 } },
      { email: "EVE@example.test", subscribed: true, firstName: "Eve" },
      { email: "tx@example.test", lastName: "Tx" },
      { email: "same@example.test", firstName: "Same" },
    ]);
    expect(results.map((r) => [r.ok, r.created, r.contact?.status])).toEqual([
      [true, true, "SUBSCRIBED"], [true, false, "UNSUBSCRIBED"], [true, false, "SUBSCRIBED"], [true, false, "SUBSCRIBED"],
    ]);
    expect(results[1].contact).toEqual(await dir.contacts.get("ws_a", "eve@example.test"));
    expect(results[1].contact).toMatchObject({ firstName: "Eve", status: "UNSUBSCRIBED" });
    expect(await dir.contacts.get("ws_a", "tx@example.test")).toMatchObject({ lastName: "Tx", status: "SUBSCRIBED" });
    expect(results[0].contact).toEqual(await dir.contacts.get("ws_a", "new@example.test"));
    // An input that changes nothing writes nothing.
    expect(await dir.contacts.get("ws_a", "same@example.test")).toEqual(before);
  });

  it("redoes one by one the items a concurrent writer inserted first, keeping created exact", async () => {
    const store = openMemoryStore();
    let race: (() => Promise<unknown>) | undefined;
    const racing = new Proxy(store, {
      get(target, key) {
        if (key !== "collection") return Reflect.get(target, key);
        return (name: string) => {
          const collection = target.collection(name);
          if (name !== "contacts") return collection;
          return new Proxy(collection, {
            get(c, k) {
              if (k === "bulkWrite") return async (ops: Parameters<Collection<Doc>["bulkWrite"]>[0]) => {
                const run = race;
                race = undefined;
                await run?.();
                return c.bulkWrite(ops);
              };
              const value = Reflect.get(c, k);
              return typeof value === "function" ? value.bind(c) : value;
            },
          });
        };
      },
    }) as Store;
    const dir = await storeDirectory(racing);
    const other = await storeDirectory(store);
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    let theirs: Awaited<ReturnType<typeof other.contacts.create>> | undefined;
    race = async () => (theirs = await other.contacts.create("ws_a", { email: "race@example.test", firstName: "Theirs", lastName: "Kept" }));
    const results = await dir.contacts.batchUpsert("ws_a", [
      { email: "first@example.test" }, { email: "race@example.test", firstName: "Ours" }, { email: "last@example.test" },
    ]);
    expect(results.map((r) => [r.ok, r.created])).toEqual([[true, true], [true, false], [true, true]]);
    expect(await dir.contacts.get("ws_a", "race@example.test")).toMatchObject({ _id: theirs!._id, firstName: "Ours", lastName: "Kept" });
    expect(results[1].contact).toEqual(await dir.contacts.get("ws_a", "race@example.test"));
    expect(await dir.contacts.count("ws_a")).toBe(3);
  });
});

describe("contacts given as text (CSV import, command line)", () => {
  it("converts text to each property's type; empty text is no value", async () => {
    const dir = await setup();
    const [ok] = await dir.contacts.batchUpsert("ws_a", [{
      email: "tess@example.test",
      textProperties: { plan: " pro ", seats: "12", vip: "yes", renewsAt: "2027-01-31", subscribed: "no", firstName: "Tess", lastName: "" },
    }]);
    expect(ok).toMatchObject({ ok: true, created: true });
    expect(await dir.contacts.get("ws_a", "tess@example.test")).toMatchObject({
      firstName: "Tess", lastName: "", status: "UNSUBSCRIBED", source: "PUBLIC_API",
      properties: { plan: " pro ", seats: 12, vip: true, renewsAt: "2027-01-31T00:00:00.000Z" },
    });
  });

  it("refuses a row whose text does not fit its property, naming the property, and writes nothing for it", async () => {
    const dir = await setup();
    const before = await snapshot(dir);
    const results = await dir.contacts.batchUpsert("ws_a", [
      { email: "a@example.test", textProperties: { seats: "lots" } },
      { email: "b@example.test", textProperties: { vip: "maybe" } },
      { email: "c@example.test", textProperties: { renewsAt: "next week" } },
      { email: "d@example.test", textProperties: { colour: "red" } },
      { email: "e@example.test", textProperties: { subscribed: "perhaps" } },
      { email: "f@example.test", properties: { plan: "pro" }, textProperties: { plan: "free" } },
    ]);
    expect(results.map((r) => [r.ok, r.error?.code, r.error?.message])).toEqual([
      [false, "invalid_property_value", expect.stringMatching(/^Property "seats" is of type NUMBER; "lots" is not a finite number/)],
      [false, "invalid_property_value", expect.stringMatching(/^Property "vip" is of type BOOLEAN/)],
      [false, "invalid_property_value", expect.stringMatching(/^Property "renewsAt" is of type DATE/)],
      [false, "unknown_contact_property", expect.stringMatching(/colour/)],
      [false, "invalid_property_value", expect.stringMatching(/^Property "subscribed" is of type BOOLEAN/)],
      [false, "invalid_contact", expect.stringMatching(/"plan" is given both as a value and as text/)],
    ]);
    expect(await snapshot(dir)).toEqual(before);
  });
});
