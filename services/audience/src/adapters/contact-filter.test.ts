import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import { openLmdbStore } from "@mailroom/store/lmdb.js";
import type { Store } from "@mailroom/store/port.js";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { storeDirectory, type TestDirectory } from "../testing.js";
import { ContactFilters, MONGODB_ENGAGEMENT_IDS } from "./contact-filter.js";
import { ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION } from "./engagement-store.js";
import { engagementsOf } from "../engagement-consumers.js";

const NOW = new Date("2026-03-31T12:00:00.000Z");
const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/**
 * The same filter cases on every store adapter: the memory store (unit tests), the embedded
 * LMDB store (production single machine) and MongoDB when MAILROOM_TEST_MONGODB_URL is set.
 */
const STORES: [string, () => Promise<Store>][] = [
  ["memory", async () => openMemoryStore()],
  ["lmdb", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mailroom-filter-"));
    tempDirs.push(dir);
    return openLmdbStore({ dir });
  }],
];
const mongoUrl = process.env.MAILROOM_TEST_MONGODB_URL;
if (mongoUrl) {
  STORES.push(["mongodb", async () => {
    const { openMongoStore } = await import("@mailroom/store/mongo.js");
    return openMongoStore({ url: mongoUrl, service: `filter_${Date.now().toString(36)}` });
  }]);
} else {
  console.log("contact filter: MongoDB adapter skipped (no MAILROOM_TEST_MONGODB_URL)");
}

/** Filter → the ws_a contacts (by first name) it selects. */
const CASES: [unknown, string[]][] = [
  [{}, ["Ann", "Bob", "Cy", "Dee.*"]],
  [{ email: "BOB@example.test" }, ["Bob"]],
  [{ email: { $endsWith: "@EXAMPLE.test" } }, ["Ann", "Bob", "Dee.*"]],
  [{ email: { $contains: "other" } }, ["Cy"]],
  [{ email: { $in: ["ann@example.test", "cy@other.test"] } }, ["Ann", "Cy"]],
  [{ firstName: { $startsWith: "d" } }, ["Dee.*"]],
  [{ firstName: { $contains: ".*" } }, ["Dee.*"]],
  [{ firstName: { $gt: "B", $lt: "D" } }, ["Bob", "Cy"]],
  [{ lastName: { $in: ["Lee", "Stone"] } }, ["Ann", "Bob"]],
  [{ status: "subscribed" }, ["Ann", "Cy"]],
  [{ status: { $nin: ["SUBSCRIBED"] } }, ["Bob", "Dee.*"]],
  [{ source: "CSV_IMPORT" }, ["Dee.*"]],
  [{ source: { $ne: "CSV_IMPORT" } }, ["Ann", "Bob", "Cy"]],
  [{ createdAt: { $gte: "2026-01-01" } }, ["Bob", "Cy"]],
  [{ createdAt: { $gt: { $ago: "P7D" } } }, ["Cy"]],
  [{ updatedAt: { $exists: true } }, ["Ann", "Bob", "Cy", "Dee.*"]],
  [{ "properties.plan": "pro" }, ["Ann", "Dee.*"]],
  [{ "properties.plan": { $exists: false } }, ["Cy"]],
  [{ "properties.plan": { $ne: "pro" } }, ["Bob", "Cy"]],
  [{ "properties.plan": { $contains: "RE" } }, ["Bob"]],
  [{ "properties.seats": { $gte: 10 } }, ["Ann", "Cy"]],
  [{ "properties.seats": { $gt: 2, $lt: 50 } }, ["Ann"]],
  [{ "properties.seats": { $in: [2, 50] } }, ["Bob", "Cy"]],
  [{ "properties.vip": true }, ["Ann", "Dee.*"]],
  [{ "properties.vip": { $ne: true } }, ["Bob", "Cy"]],
  [{ "properties.renewsAt": { $lt: "2026-01-01" } }, ["Bob"]],
  [{ "properties.renewsAt": { $gte: { $ago: "P1Y" } } }, ["Ann", "Bob"]],
  [{ "properties.renewsAt": "2026-01-15T00:00:00Z" }, ["Ann"]],
  [{ "properties.tags": "beta" }, ["Ann"]],
  [{ "properties.tags": { $contains: "NEWS" } }, ["Ann", "Bob"]],
  [{ "properties.tags": { $in: ["beta", "vip"] } }, ["Ann"]],
  [{ "properties.tags": { $nin: ["news"] } }, ["Cy", "Dee.*"]],
  [{ "properties.city": "Berlin" }, ["Ann"]],
  [{ groups: "beta" }, ["Ann", "Bob"]],
  [{ groups: { $in: ["beta", "alpha"] } }, ["Ann", "Bob"]],
  [{ groups: { $ne: "alpha" } }, ["Ann", "Cy", "Dee.*"]],
  [{ groups: { $nin: ["beta"] } }, ["Cy", "Dee.*"]],
  [{ $or: [{ firstName: "Ann" }, { "properties.seats": 50 }] }, ["Ann", "Cy"]],
  [{ $and: [{ "properties.plan": "pro" }, { $not: { status: "BANNED" } }] }, ["Ann"]],
  [{ $not: { $or: [{ groups: "beta" }, { "properties.plan": "pro" }] } }, ["Cy"]],
  [{ "properties.plan": "pro", "properties.vip": true, status: "BANNED" }, ["Dee.*"]],
  [{ $engagement: { event: "opened" } }, ["Ann", "Bob"]],
  [{ $engagement: { event: "opened", min: 2 } }, ["Ann"]],
  [{ $engagement: { event: "opened", since: { $ago: "P30D" } } }, ["Ann"]],
  [{ $engagement: { event: "opened", since: { $ago: "P30D" }, min: 2 } }, ["Ann"]],
  [{ $engagement: { event: "opened", since: "2026-03-22", min: 2 } }, []],
  [{ $engagement: { event: "opened", broadcastId: "cmp_1" } }, ["Ann", "Bob"]],
  [{ $engagement: { event: "opened", broadcastId: "cmp_1", since: "2026-02-01" } }, ["Ann"]],
  [{ $engagement: { event: "delivered", broadcastId: "cmp_1" }, $not: { $engagement: { event: "opened", broadcastId: "cmp_1" } } }, ["Cy"]],
  [{ $engagement: { event: "clicked" } }, ["Cy"]],
  [{ $engagement: { event: "bounced" } }, []],
  [{ $or: [{ $engagement: { event: "opened", broadcastId: "cmp_2" } }, { $engagement: { event: "clicked" } }], status: "SUBSCRIBED" }, ["Ann", "Cy"]],
];

async function seed(dir: TestDirectory, filters: ContactFilters) {
  for (const ws of ["ws_a", "ws_b"]) {
    await dir.workspaces.create({ id: ws, name: ws });
    await dir.properties.create(ws, { slug: "plan", type: "select", options: ["pro", "free"] });
    await dir.properties.create(ws, { slug: "seats", type: "number" });
    await dir.properties.create(ws, { slug: "vip", type: "boolean" });
    await dir.properties.create(ws, { slug: "renewsAt", type: "date" });
    await dir.properties.create(ws, { slug: "tags", type: "multi_select", options: ["news", "beta", "vip"] });
  }
  const groups = dir.store.collection("groups");
  await groups.insertMany([
    { _id: "grp_1", workspaceId: "ws_a", publicId: "beta", createdAt: NOW },
    { _id: "grp_2", workspaceId: "ws_a", publicId: "alpha", createdAt: NOW },
    { _id: "grp_3", workspaceId: "ws_b", publicId: "gamma", createdAt: NOW },
  ]);
  const add = async (ws: string, input: Parameters<TestDirectory["contacts"]["create"]>[1], groupIds?: string[]) => {
    const c = await dir.contacts.create(ws, input);
    if (groupIds) await dir.store.collection("contacts").updateOne({ _id: c._id }, { $set: { groups: groupIds } });
    return c;
  };
  const ann = await add("ws_a", {
    email: "ann@example.test", firstName: "Ann", lastName: "Lee", createdAt: new Date("2025-01-01T00:00:00Z"),
    properties: { plan: "pro", seats: 10, vip: true, renewsAt: "2026-01-15", tags: ["news", "beta"], city: "Berlin" },
  }, ["grp_1"]);
  const bob = await add("ws_a", {
    email: "Bob@Example.test", firstName: "Bob", lastName: "Stone", status: "UNSUBSCRIBED", createdAt: new Date("2026-03-01T00:00:00Z"),
    properties: { plan: "free", seats: 2, vip: false, renewsAt: "2025-06-01", tags: ["news"] },
  }, ["grp_1", "grp_2"]);
  const cy = await add("ws_a", { email: "cy@other.test", firstName: "Cy", createdAt: new Date("2026-03-30T00:00:00Z"), properties: { seats: 50, tags: [] } }, []);
  await add("ws_a", {
    email: "dee@example.test", firstName: "Dee.*", status: "BANNED", source: "CSV_IMPORT", createdAt: new Date("2024-06-01T00:00:00Z"),
    properties: { plan: "pro", vip: true },
  });
  // Another workspace: same shapes, same broadcast id; never selected from ws_a.
  const eve = await add("ws_b", { email: "eve@example.test", firstName: "Eve", properties: { plan: "pro", seats: 10, vip: true, tags: ["beta"] } }, ["grp_3"]);
  const at = (iso: string) => new Date(iso);
  const e = filters.engagement;
  await e.record({ workspaceId: "ws_a", contactId: ann._id, kind: "delivered", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-03-20T10:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: ann._id, kind: "opened", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-03-20T11:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: ann._id, kind: "opened", messageId: "cmp_2", broadcastId: "cmp_2", at: at("2026-03-25T11:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: bob._id, kind: "delivered", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-01-01T10:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: bob._id, kind: "opened", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-01-01T11:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: cy._id, kind: "delivered", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-03-20T10:00:00Z") });
  await e.record({ workspaceId: "ws_a", contactId: cy._id, kind: "clicked", messageId: "trs_1", at: at("2026-03-29T10:00:00Z") });
  await e.record({ workspaceId: "ws_b", contactId: eve._id, kind: "opened", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-03-20T11:00:00Z") });
  await e.record({ workspaceId: "ws_b", contactId: eve._id, kind: "clicked", messageId: "cmp_1", broadcastId: "cmp_1", at: at("2026-03-20T11:00:00Z") });
  return { ann, bob, cy, eve };
}

for (const [name, open] of STORES) {
  describe(`contact filters on the ${name} store`, () => {
    let dir: TestDirectory;
    let filters: ContactFilters;
    let ids: Awaited<ReturnType<typeof seed>>;
    beforeAll(async () => {
      const store = await open();
      filters = await ContactFilters.open(store, { now: () => NOW });
      dir = await storeDirectory(store);
      ids = await seed(dir, filters);
    }, 60_000);
    afterAll(async () => {
      await dir?.store.close();
    });

    const names = async (filter: unknown, ws = "ws_a") => {
      const compiled = await filters.compileContactFilter(ws, filter);
      const page = await dir.contacts.list(ws, { filter: compiled, limit: 500 });
      expect(await dir.contacts.count(ws, { filter: compiled })).toBe(page.items.length);
      return page.items.map((c) => c.firstName).sort();
    };

    it.each(CASES.map(([filter, expected]) => [JSON.stringify(filter), filter, expected] as const))("%s", async (_, filter, expected) => {
      expect(await names(filter)).toEqual(expected);
      // The same filter as JSON text (a query parameter) selects the same contacts.
      expect(await names(JSON.stringify(filter))).toEqual(expected);
    });

    it("pages a filtered listing with cursors, and streams it", async () => {
      const filter = await filters.compileContactFilter("ws_a", { email: { $endsWith: "@example.test" } });
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await dir.contacts.list("ws_a", { filter, limit: 1, cursor });
        seen.push(...page.items.map((c) => c.firstName));
        cursor = page.hasMore ? page.nextCursor : undefined;
      } while (cursor);
      expect(seen.sort()).toEqual(["Ann", "Bob", "Dee.*"]);
      const streamed: string[] = [];
      for await (const page of dir.contacts.stream("ws_a", { filter, batchSize: 2, subscribedOnly: true })) streamed.push(...page.map((c) => c.firstName));
      expect(streamed).toEqual(["Ann"]);
    });

    it("keeps to the workspace: ws_b's filters see only ws_b's contacts, groups and engagement", async () => {
      expect(await names({ "properties.plan": "pro" }, "ws_b")).toEqual(["Eve"]);
      expect(await names({ $engagement: { event: "opened", broadcastId: "cmp_1" } }, "ws_b")).toEqual(["Eve"]);
      expect(await names({ groups: "gamma" }, "ws_b")).toEqual(["Eve"]);
      const err = errorInfoOf(await filters.compileContactFilter("ws_a", { groups: "gamma" }).catch((e) => e));
      expect(err).toMatchObject({ code: "invalid_filter", message: 'filter.groups: unknown group "gamma"' });
      expect(errorInfoOf(await filters.compileContactFilter("ws_b", { groups: "grp_1" }).catch((e) => e))?.code).toBe("invalid_filter");
    });

    it("refuses a bad filter with invalid_filter naming its path", async () => {
      const codeAndMessage = async (filter: unknown) => {
        const info = errorInfoOf(await filters.compileContactFilter("ws_a", filter).then(() => undefined, (e) => e));
        return info && { code: info.code, message: info.message };
      };
      expect(await codeAndMessage({ $and: [{ firstName: "a" }, { "properties.plan2": "x" }] })).toEqual({ code: "invalid_filter", message: 'filter.$and[1].properties.plan2: unknown property "plan2"' });
      expect(await codeAndMessage('{"email": ')).toMatchObject({ code: "invalid_filter", message: expect.stringContaining("filter: not valid JSON") });
      expect(await codeAndMessage({ "properties.seats": "ten" })).toMatchObject({ code: "invalid_filter", message: expect.stringContaining("filter.properties.seats:") });
      expect(await codeAndMessage({ createdAt: { $gt: { $ago: "P1X" } } })).toMatchObject({ code: "invalid_filter", message: expect.stringContaining("filter.createdAt.$gt.$ago:") });
      expect(await codeAndMessage("x".repeat(40_000))).toMatchObject({ code: "invalid_filter" });
    });

    it("records each (contact, kind, message) once; deleting or erasing a contact removes its records", async () => {
      const e = filters.engagement;
      expect(await e.record({ workspaceId: "ws_a", contactId: ids.ann._id, kind: "opened", messageId: "cmp_1", broadcastId: "cmp_1", at: NOW })).toBe(false);
      expect(await names({ $engagement: { event: "opened", min: 3 } })).toEqual([]);
      expect(await dir.store.collection(ENGAGEMENT_COLLECTION).countDocuments({ workspaceId: "ws_a", contactId: ids.ann._id })).toBe(3);
      await dir.contacts.delete("ws_a", "ann@example.test");
      expect(await dir.store.collection(ENGAGEMENT_COLLECTION).countDocuments({ workspaceId: "ws_a", contactId: ids.ann._id })).toBe(0);
      expect(await dir.store.collection(ENGAGEMENT_TOTALS_COLLECTION).countDocuments({ workspaceId: "ws_a", contactId: ids.ann._id })).toBe(0);
      expect(await names({ $engagement: { event: "opened" } })).toEqual(["Bob"]);
      await dir.erasure.eraseContact("ws_a", "cy@other.test");
      expect(await dir.store.collection(ENGAGEMENT_COLLECTION).countDocuments({ workspaceId: "ws_a", contactId: ids.cy._id })).toBe(0);
      expect(await names({ $engagement: { event: "clicked" } })).toEqual([]);
      // The other workspace's records are untouched.
      expect(await names({ $engagement: { event: "clicked" } }, "ws_b")).toEqual(["Eve"]);
    });
  });
}

describe("engagementsOf (MailEvents → records, a batch at a time)", () => {
  const contacts = new Map([["ws_a:ctc_1", { _id: "ctc_1", emailLower: "ann@example.test" }]]);
  const lookups: string[] = [];
  const deps = {
    contacts: {
      existingIds: async (ws: string, ids: readonly string[]) => {
        lookups.push(`ids ${ws} ${ids.join(",")}`);
        return new Set(ids.filter((id) => contacts.has(`${ws}:${id}`)));
      },
      findManyByEmail: async (ws: string, emails: string[]) => {
        lookups.push(`emails ${ws} ${emails.join(",")}`);
        return [...contacts.entries()].filter(([k, c]) => k.startsWith(`${ws}:`) && emails.includes(c.emailLower)).map(([, c]) => c) as never;
      },
    },
    engagement: { recordMany: async (e: readonly unknown[]) => e.map(() => true) },
  };
  const event = (init: Record<string, unknown>) =>
    create(MailEventSchema, { eventId: "e1", workspaceId: "ws_a", type: MailEventType.OPENED, source: DeliverySource.BROADCAST, occurredAt: timestampFromDate(NOW), ...init });

  it("names the contact by id, else by the recipient's address; the message by broadcast, email or Message-ID", async () => {
    const records = await engagementsOf([
      event({ contactId: "ctc_1", broadcastId: "cmp_9", messageId: "m@x" }),
      event({ recipient: "Ann <ANN@example.test>", emailId: "trs_1", source: DeliverySource.TRANSACTIONAL }),
      event({ recipient: "ann@example.test", messageId: "m@x" }),
    ], "opened", deps);
    expect(records[0]).toEqual({ workspaceId: "ws_a", contactId: "ctc_1", kind: "opened", messageId: "cmp_9", broadcastId: "cmp_9", at: NOW });
    expect(records[1]).toMatchObject({ contactId: "ctc_1", messageId: "trs_1", broadcastId: undefined, kind: "opened" });
    expect(records[2]).toMatchObject({ messageId: "m@x" });
  });
  it("records nothing for test sends, unknown contacts or another workspace's contact", async () => {
    const records = await engagementsOf([
      event({ contactId: "ctc_1", broadcastId: "cmp_9", source: DeliverySource.BROADCAST_TEST }),
      event({ contactId: "ctc_2", broadcastId: "cmp_9" }),
      event({ workspaceId: "ws_b", contactId: "ctc_1", broadcastId: "cmp_9" }),
      event({ recipient: "bob@example.test", broadcastId: "cmp_9" }),
      event({ contactId: "ctc_1", broadcastId: "cmp_9" }),
    ], "opened", deps);
    expect(records.map((r) => r?.contactId)).toEqual([undefined, undefined, undefined, undefined, "ctc_1"]);
  });
  it("looks a batch's contacts up together: one read per workspace and kind of key", async () => {
    lookups.length = 0;
    await engagementsOf([
      event({ contactId: "ctc_1", broadcastId: "cmp_9" }),
      event({ contactId: "ctc_2", broadcastId: "cmp_9" }),
      event({ recipient: "ann@example.test", emailId: "trs_1" }),
      event({ workspaceId: "ws_b", contactId: "ctc_3", broadcastId: "cmp_8" }),
    ], "delivered", deps);
    expect(lookups.sort()).toEqual(["emails ws_a ann@example.test", "ids ws_a ctc_1,ctc_2", "ids ws_b ctc_3"]);
  });
});

describe("engagement terms on MongoDB", () => {
  it("refuses (invalid_filter) a filter whose $engagement terms resolve to more contact ids than one MongoDB query can name; the embedded store takes it", async () => {
    const inner = await openMemoryStore();
    const asMongo = new Proxy(inner, { get: (target, prop) => (prop === "kind" ? "mongodb" : Reflect.get(target, prop)) }) as Store;
    const ids = (n: number) => Object.freeze(Array.from({ length: n }, (_, i) => `ctc_${String(i).padStart(8, "0")}`));
    let resolved = 0;
    const engagement = { contactsWith: async () => ids(resolved) } as unknown as import("./engagement-store.js").EngagementStore;
    const filter = { $or: [{ $engagement: { event: "opened" } }, { $engagement: { event: "clicked" } }] };
    resolved = MONGODB_ENGAGEMENT_IDS / 2;
    await expect((await ContactFilters.open(asMongo, { engagement })).compileContactFilter("ws_a", filter)).resolves.toBeDefined();
    resolved = MONGODB_ENGAGEMENT_IDS / 2 + 1;
    const refused = await (await ContactFilters.open(asMongo, { engagement })).compileContactFilter("ws_a", filter).catch((err: unknown) => err);
    expect(errorInfoOf(refused)).toMatchObject({ code: "invalid_filter" });
    expect((refused as Error).message).toMatch(/^filter: its \$engagement terms resolve to 300002 contact ids/);
    await expect((await ContactFilters.open(inner, { engagement })).compileContactFilter("ws_a", filter)).resolves.toBeDefined();
    await inner.close();
  });
});
