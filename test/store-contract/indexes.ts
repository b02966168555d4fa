/** Store contract: wildcard and unique indexes, deletes and TTL indexes. */
import { beforeAll, describe, expect, it } from "vitest";
import { DuplicateKeyError, type Collection } from "@mailroom/store/port.js";
import type { ContractContext, Item } from "./context.js";

export function describeIndexCases({ fresh, ids, store }: ContractContext): void {
  describe("wildcard index over a sub-document", () => {
    // Two collections with the same documents, one with { ws, "properties.$**" } (and the
    // groups index), one with no index at all: every answer must be the same.
    let indexed: Collection<Item>;
    let plain: Collection<Item>;
    let seed = 11;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n));
    const plans = ["free", "pro", "team", "Pro"];
    const propertiesOf = (): Record<string, unknown> => {
      const p: Record<string, unknown> = {};
      if (rand(6)) p.plan = plans[rand(plans.length)];
      if (rand(3)) p.seats = [rand(20), `${rand(20)}`, rand(20) + 0.5, true, null][rand(5)];
      if (rand(2)) p.signup = day(rand(60));
      if (rand(3)) p.tags = Array.from({ length: rand(4) }, () => ["a", "b", "c", 1, 2][rand(5)]);
      if (rand(3)) p.address = { city: ["Paris", "Lyon", "Oslo"][rand(3)], zip: rand(3) ? `7${rand(10)}000` : rand(100) };
      if (rand(4) === 0) p.items = [{ sku: `p${rand(4)}`, qty: rand(5) }, { sku: `p${rand(4)}` }];
      if (rand(5) === 0) p.vip = rand(2) === 0;
      if (rand(8) === 0) p.plan = [plans[rand(4)], plans[rand(4)]];
      if (rand(10) === 0) p.matrix = [[rand(3)], rand(3)];
      return p;
    };
    const docs: Item[] = [];
    const filters: Record<string, unknown>[] = [];

    beforeAll(async () => {
      indexed = fresh();
      plain = fresh();
      await indexed.createIndex({ keys: { ws: 1, "properties.$**": 1 } });
      await indexed.createIndex({ keys: { ws: 1, groups: 1, _id: 1 } });
      await indexed.createIndex({ keys: { ws: 1, status: 1, _id: 1 } });
      for (let i = 0; i < 400; i++) {
        const doc: Item = { _id: `c${String(rand(100_000)).padStart(6, "0")}_${i}`, ws: `w${rand(2)}`, status: rand(4) ? "SUBSCRIBED" : "UNSUBSCRIBED" };
        if (rand(10)) doc.properties = propertiesOf();
        else if (rand(2)) doc.properties = rand(2) ? "scalar" : [{ plan: "pro" }, { plan: "free" }];
        if (rand(2)) doc.groups = ["g1", "g2", "g3"].filter(() => rand(2));
        docs.push(doc);
      }
      await indexed.insertMany(docs);
      await plain.insertMany(docs);
      const ws = () => `w${rand(2)}`;
      filters.push(
        { ws: "w0", "properties.plan": "pro" },
        { ws: "w1", "properties.plan": "pro" },
        { "properties.plan": "pro" },
        { ws: "w0", "properties.plan": { $eq: "team" } },
        { ws: "w0", "properties.plan": { $in: ["pro", "team"] } },
        { ws: "w1", "properties.plan": { $in: ["pro", 3, true, day(3)] } },
        { ws: "w0", "properties.plan": { $in: [] } },
        { ws: "w0", "properties.plan": { $regex: "^pro$", $options: "i" } },
        { ws: "w0", "properties.plan": null },
        { ws: "w0", "properties.plan": { $exists: false } },
        { ws: "w1", "properties.plan": { $ne: "pro" } },
        { ws: "w1", "properties.plan": { $nin: ["pro", "free"] } },
        { ws: "w0", "properties.plan": { $gte: "p" } },
        { ws: "w0", "properties.plan": { $gt: "free", $lte: "team" } },
        { ws: "w0", "properties.seats": 5 },
        { ws: "w0", "properties.seats": "5" },
        { ws: "w1", "properties.seats": true },
        { ws: "w1", "properties.seats": { $gt: 5 } },
        { ws: "w1", "properties.seats": { $gte: 3, $lt: 10.5 } },
        { ws: "w0", "properties.seats": { $lt: "3" } },
        { ws: "w0", "properties.seats": { $gt: 5, $lt: "9" } },
        { ws: "w1", "properties.signup": day(5) },
        { ws: "w1", "properties.signup": { $gte: day(10), $lt: day(30) } },
        { ws: "w0", "properties.signup": { $lt: day(20) } },
        { ws: "w0", "properties.tags": "a" },
        { ws: "w1", "properties.tags": 1 },
        { ws: "w1", "properties.tags": { $in: ["b", 2] } },
        { ws: "w0", "properties.tags": { $gte: "b" } },
        { ws: "w0", "properties.tags.0": "a" },
        { ws: "w0", "properties.tags": [] },
        { ws: "w1", "properties.address.city": "Paris" },
        { ws: "w1", "properties.address.zip": { $gte: "72000" } },
        { ws: "w0", "properties.address.zip": { $lt: 50 } },
        { ws: "w0", "properties.address": { city: "Oslo", zip: 5 } },
        { ws: "w1", "properties.items.sku": "p1" },
        { ws: "w1", "properties.items.qty": { $gte: 2 } },
        { ws: "w0", "properties.vip": false },
        { ws: "w0", "properties.matrix": 1 },
        { ws: "w0", properties: "scalar" },
        { $and: [{ ws: "w1" }, { "properties.plan": "pro" }] },
        { $and: [{ ws: "w1" }, { "properties.seats": { $gte: 2 } }, { "properties.seats": { $lte: 12 } }] },
        { ws: "w0", status: "SUBSCRIBED", "properties.plan": "pro" },
        { ws: "w0", status: "SUBSCRIBED", groups: "g2", "properties.plan": { $in: ["pro", "team"] } },
        { ws: "w1", "properties.plan": "pro", "properties.seats": { $gt: 2 } },
        { ws: "w1", $or: [{ "properties.plan": "pro" }, { "properties.vip": true }] },
        // The group members' index ({ ws, groups, _id }: several entries per document).
        { ws: "w0", groups: "g2" },
        { ws: "w1", groups: { $eq: "g1" }, status: "SUBSCRIBED" },
        { $and: [{ ws: "w1" }, { $and: [{ groups: "g3" }] }] },
        { ws: "w1", groups: { $in: ["g1", "g3"] } },
        { ws: "w0", groups: { $ne: "g1" } },
      );
      for (let i = 0; i < 40; i++) {
        const value = [plans[rand(4)], rand(20), `${rand(20)}`, day(rand(60)), true][rand(5)];
        const path = ["plan", "seats", "signup", "tags", "address.city"][rand(5)];
        const choice = rand(4);
        const condition = choice === 0 ? value : choice === 1 ? { $in: [value, plans[rand(4)], rand(20)] } : choice === 2 ? { $gte: value } : { $gt: value, $lte: value };
        filters.push({ ws: ws(), [`properties.${path}`]: condition });
      }
    });

    const same = async () => {
      for (const filter of filters) {
        const expected = ids(await plain.find(filter, { sort: { _id: 1 } }));
        expect({ filter, got: ids(await indexed.find(filter, { sort: { _id: 1 } })) }).toEqual({ filter, got: expected });
        expect({ filter, count: await indexed.countDocuments(filter) }).toEqual({ filter, count: expected.length });
        expect({ filter, got: ids(await indexed.find(filter, { sort: { _id: -1 }, limit: 7 })) }).toEqual({ filter, got: [...expected].reverse().slice(0, 7) });
        // Paging in _id order with { _id: { $gt: last } }, as audiences stream.
        const paged: string[] = [];
        for (let last = ""; ; ) {
          const page = ids(await indexed.find({ $and: [filter, { _id: { $gt: last } }] }, { sort: { _id: 1 }, limit: 9 }));
          paged.push(...page);
          if (page.length < 9) break;
          last = page[page.length - 1];
        }
        expect({ filter, paged }).toEqual({ filter, paged: expected });
        if (expected.length > 2) {
          const after = expected[1];
          const page = ids(await indexed.find({ ...filter, _id: { $gt: after } }, { sort: { _id: 1 }, limit: 5 }));
          expect({ filter, page }).toEqual({ filter, page: expected.slice(2, 7) });
        }
      }
    };

    it("answers equality, $in and ranges under properties exactly as a scan (arrays, missing fields, mixed types)", async () => {
      // Not a vacuous comparison: most filters match something, some match nothing.
      const sizes = await Promise.all(filters.map((f) => plain.countDocuments(f)));
      expect(sizes.filter((n) => n > 0).length).toBeGreaterThan(filters.length / 2);
      expect(sizes).toContain(0);
      await same();
    });

    it("stays exact after updates ($set, $unset, $addToSet, $pull, replacing the sub-document) and deletes", async () => {
      const updates = (): Record<string, unknown>[] => [
        { $set: { "properties.plan": plans[rand(4)] } },
        { $set: { "properties.seats": rand(2) ? rand(20) : `${rand(20)}` } },
        { $unset: { "properties.plan": "" } },
        { $unset: { properties: "" } },
        { $set: { properties: propertiesOf() } },
        { $addToSet: { "properties.tags": ["a", "b", "c", 1, 2][rand(5)] } },
        { $pull: { "properties.tags": { $in: ["a", 1] } } },
        { $set: { "properties.address.city": "Oslo" } },
        { $set: { ws: `w${rand(2)}` } },
        { $addToSet: { groups: "g9" } },
      ];
      for (let i = 0; i < 150; i++) {
        const doc = docs[rand(docs.length)];
        const list = updates();
        const update = list[rand(list.length)];
        const ra = await plain.updateOne({ _id: doc._id }, update).catch((e: Error) => e.constructor.name);
        const rb = await indexed.updateOne({ _id: doc._id }, update).catch((e: Error) => e.constructor.name);
        expect(rb).toEqual(ra);
      }
      await plain.updateMany({ ws: "w1", "properties.plan": "free", "properties.seats": { $exists: true } }, { $set: { "properties.plan": "pro" } });
      await indexed.updateMany({ ws: "w1", "properties.plan": "free", "properties.seats": { $exists: true } }, { $set: { "properties.plan": "pro" } });
      const victim = await plain.findOne({ ws: "w1", "properties.seats": { $gte: 10 } }, { sort: { _id: 1 } });
      expect(victim).not.toBeNull();
      for (const c of [plain, indexed]) {
        await c.deleteMany({ ws: "w0", "properties.plan": "team" });
        expect(await c.deleteOne({ _id: victim!._id, "properties.seats": { $gte: 10 } })).toEqual({ deletedCount: 1 });
        await c.insertOne({ _id: "zz_new", ws: "w0", properties: { plan: "pro", seats: 4, tags: ["a"] } });
      }
      expect(await indexed.countDocuments({ ws: "w0", "properties.plan": "team" })).toBe(0);
      await same();
    });
  });

  describe("unique indexes", () => {
    it("insertOne, updateOne and upsert that break a unique index throw DuplicateKeyError", async () => {
      const c = fresh();
      await c.createIndex({ keys: { email: 1 }, unique: true });
      await c.createIndex({ keys: { email: 1 }, unique: true }); // idempotent
      await c.insertOne({ _id: "a", email: "a@x.io" });
      await c.insertOne({ _id: "b", email: "b@x.io" });
      await expect(c.insertOne({ _id: "c", email: "a@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.updateOne({ _id: "b" }, { $set: { email: "a@x.io" } })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.findOneAndUpdate({ _id: "b" }, { $set: { email: "a@x.io" } })).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(
        c.updateOne({ _id: "z" }, { $setOnInsert: { email: "b@x.io" } }, { upsert: true }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(c.insertMany([{ _id: "m", email: "m@x.io" }, { _id: "n", email: "m@x.io" }])).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
        { _id: "a", email: "a@x.io" },
        { _id: "b", email: "b@x.io" },
        { _id: "m", email: "m@x.io" },
      ]);
      // Freed values can be reused.
      await c.deleteOne({ _id: "a" });
      await c.insertOne({ _id: "c", email: "a@x.io" });
    });

    it("compound unique indexes scope uniqueness (per tenant)", async () => {
      const c = fresh();
      await c.createIndex({ keys: { tenant: 1, email: 1 }, unique: true });
      await c.insertOne({ _id: "a", tenant: "t1", email: "same@x.io" });
      await c.insertOne({ _id: "b", tenant: "t2", email: "same@x.io" });
      await expect(c.insertOne({ _id: "c", tenant: "t1", email: "same@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.countDocuments()).toBe(2);
    });

    it("sparse unique indexes allow many documents without the field", async () => {
      const c = fresh();
      await c.createIndex({ keys: { idempotencyKey: 1 }, unique: true, sparse: true });
      await c.insertMany([{ _id: "a" }, { _id: "b" }, { _id: "c", idempotencyKey: "k" }]);
      await expect(c.insertOne({ _id: "d", idempotencyKey: "k" })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.countDocuments()).toBe(3);
    });

    it("creating a unique index over existing duplicates fails with DuplicateKeyError", async () => {
      const c = fresh();
      await c.insertMany([{ _id: "a", v: 1 }, { _id: "b", v: 1 }]);
      await expect(c.createIndex({ keys: { v: 1 }, unique: true })).rejects.toBeInstanceOf(DuplicateKeyError);
    });

    it("concurrent upserts of the same key create exactly one document", async () => {
      const c = fresh();
      await c.createIndex({ keys: { key: 1 }, unique: true });
      const settled = await Promise.allSettled(
        Array.from({ length: 20 }, () => c.updateOne({ key: "same" }, { $inc: { n: 1 } }, { upsert: true })),
      );
      const failures = settled.filter((s) => s.status === "rejected") as PromiseRejectedResult[];
      // MongoDB may let a racing upsert fail with a duplicate key; nothing else is acceptable.
      for (const f of failures) expect(f.reason).toBeInstanceOf(DuplicateKeyError);
      expect(await c.countDocuments({ key: "same" })).toBe(1);
      expect((await c.findOne({ key: "same" }))!.n).toBe(20 - failures.length);
    });
  });

  describe("deletes and indexes", () => {
    it("deleteOne deletes a single match; deleteMany all matches", async () => {
      const c = fresh();
      await c.insertMany([
        { _id: "a", t: "x" },
        { _id: "b", t: "x" },
        { _id: "c", t: "x" },
        { _id: "d", t: "y" },
      ]);
      expect(await c.deleteOne({ t: "x" })).toEqual({ deletedCount: 1 });
      expect(await c.countDocuments({ t: "x" })).toBe(2);
      expect(await c.deleteOne({ t: "nope" })).toEqual({ deletedCount: 0 });
      expect(await c.deleteMany({ t: "x" })).toEqual({ deletedCount: 2 });
      expect(ids(await c.find({}))).toEqual(["d"]);
      expect(await c.deleteMany({})).toEqual({ deletedCount: 1 });
      expect(await c.countDocuments()).toBe(0);
    });

    it("accepts TTL indexes and keeps documents that have not expired", async () => {
      const c = fresh();
      await c.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 3600 });
      await c.createIndex({ keys: { createdAt: 1 }, expireAfterSeconds: 86_400 });
      await c.insertOne({ _id: "a", expiresAt: new Date(), createdAt: new Date() });
      expect(await c.countDocuments()).toBe(1);
      await expect(c.createIndex({ keys: { a: 1, b: 1 }, expireAfterSeconds: 10 })).rejects.toThrow(/TTL/);
    });

    it("hands out the same collection for the same name", async () => {
      const name = `contract_same_${Date.now().toString(36)}`;
      await store().collection<Item>(name).insertOne({ _id: "a" });
      expect(await store().collection<Item>(name).findOne({ _id: "a" })).toEqual({ _id: "a" });
    });
  });
}
