/**
 * The store port contract: every adapter must pass this suite unchanged. Each test works in
 * its own fresh collection, so adapters backed by a shared server need no cleanup between tests.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DuplicateKeyError, type Collection, type Doc, type Store } from "./port.js";

export interface StoreContractOptions {
  /** Skip the whole suite (e.g. no MongoDB available). */
  skip?: boolean;
  /** Called once after the suite, e.g. to drop a test database. */
  cleanup?: () => Promise<void>;
}

type Item = Doc & Record<string, any>;

export function describeStoreContract(name: string, open: () => Promise<Store>, options: StoreContractOptions = {}): void {
  describe.skipIf(options.skip === true)(`store contract: ${name}`, () => {
    let store: Store;
    let counter = 0;
    const fresh = (): Collection<Item> => store.collection<Item>(`contract_${Date.now().toString(36)}_${++counter}`);
    const ids = (docs: Item[]) => docs.map((d) => d._id);

    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
      await options.cleanup?.();
    });

    describe("findIdSegments", () => {
      const all = async (it: AsyncIterable<string[]>, batches: number[] = []) => {
        const out: string[] = [];
        for await (const batch of it) {
          batches.push(batch.length);
          out.push(...batch);
        }
        return out.sort();
      };
      const day = (d: number) => new Date(Date.UTC(2026, 0, d));

      it("answers the segment after a prefix of each matching _id from an index range (equality, then an inclusive date range)", async () => {
        const c = fresh();
        await c.createIndex({ keys: { workspaceId: 1, kind: 1, last: 1 } });
        const docs: Item[] = [];
        for (let i = 0; i < 30; i++) {
          for (const kind of ["opened", "clicked"]) {
            docs.push({ _id: `ws1:${kind}:ctc_${String(i).padStart(3, "0")}`, workspaceId: "ws1", kind, last: day(1 + (i % 10)) });
          }
        }
        docs.push({ _id: "ws2:opened:ctc_900", workspaceId: "ws2", kind: "opened", last: day(9) });
        docs.push({ _id: "ws1:opened:ctc_\u00e9t\u00e9", workspaceId: "ws1", kind: "opened", last: day(8) }); // not ASCII
        docs.push({ _id: "other-shape", workspaceId: "ws1", kind: "opened", last: day(9) }); // not under the prefix
        docs.push({ _id: "ws1:opened:ctc_str", workspaceId: "ws1", kind: "opened", last: "2026-01-09" }); // a string, not a date
        await c.insertMany(docs);
        const batches: number[] = [];
        const got = await all(c.findIdSegments({ workspaceId: "ws1", kind: "opened", last: { $gte: day(7) } }, { prefix: "ws1:opened:" }, { batchSize: 4 }), batches);
        const expected = docs
          .filter((d) => d.workspaceId === "ws1" && d.kind === "opened" && d.last instanceof Date && d.last >= day(7) && d._id.startsWith("ws1:opened:"))
          .map((d) => d._id.slice("ws1:opened:".length))
          .sort();
        expect(expected).toContain("ctc_\u00e9t\u00e9");
        expect(expected.length).toBe(13);
        expect(got).toEqual(expected);
        expect(Math.max(...batches)).toBeLessThanOrEqual(4);
        // Up to a closing $lte, and a filter no index range answers exactly (checked document by document).
        expect(await all(c.findIdSegments({ workspaceId: "ws1", kind: "opened", last: { $gte: day(7), $lte: day(7) } }, { prefix: "ws1:opened:" })))
          .toEqual(["ctc_006", "ctc_016", "ctc_026"]);
        expect(await all(c.findIdSegments({ workspaceId: "ws1", kind: "opened", last: { $gt: day(9) } }, { prefix: "ws1:opened:" })))
          .toEqual(["ctc_009", "ctc_019", "ctc_029"]);
        expect(await all(c.findIdSegments({ workspaceId: "ws1", kind: { $in: ["opened"] }, last: { $gte: day(10) }, _id: { $ne: "ws1:opened:ctc_019" } }, { prefix: "ws1:opened:" })))
          .toEqual(["ctc_009", "ctc_029"]);
      });

      it("answers segments of an _id range up to an end character, leaving out the ids exclusive bounds name", async () => {
        const c = fresh();
        const ids = [
          "w:opened:brd1:", // the $gt bound itself
          "w:opened:brd1:ctc_a:m1", "w:opened:brd1:ctc_b:m2", "w:opened:brd1:ctc_c:m3", "w:opened:brd1:ctc_\u00fc:m4",
          "w:opened:brd2:ctc_a:m5", "w:clicked:brd1:ctc_a:m1",
        ];
        await c.insertMany(ids.map((_id) => ({ _id })));
        const prefix = "w:opened:brd1:";
        expect(await all(c.findIdSegments({ _id: { $gt: prefix, $lt: `${prefix}\uffff` } }, { prefix, end: ":" }, { batchSize: 2 })))
          .toEqual(["ctc_a", "ctc_b", "ctc_c", "ctc_\u00fc"]);
        expect(await all(c.findIdSegments({ _id: { $gte: "w:opened:brd1:ctc_b", $lt: "w:opened:brd1:ctc_c:m3" } }, { prefix })))
          .toEqual(["ctc_b:m2"]);
        expect(await all(c.findIdSegments({ _id: { $gt: "zzz" } }, { prefix }))).toEqual([]);
      });
    });

    describe("insert and read", () => {
      it("round-trips plain objects with Dates, nested values and arrays", async () => {
        const c = fresh();
        const at = new Date("2024-05-06T07:08:09.123Z");
        await c.insertOne({ _id: "a", at, nested: { deep: { n: 1 } }, list: [1, "two", { three: 3 }], flag: false, none: null });
        const doc = await c.findOne({ _id: "a" });
        expect(doc).toEqual({ _id: "a", at, nested: { deep: { n: 1 } }, list: [1, "two", { three: 3 }], flag: false, none: null });
        expect(doc!.at).toBeInstanceOf(Date);
        expect(doc!.at.getTime()).toBe(at.getTime());
        expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
      });

      it("returns copies: mutating a result or the inserted object does not change the store", async () => {
        const c = fresh();
        const original = { _id: "a", tags: ["x"] };
        await c.insertOne(original);
        original.tags.push("changed-after-insert");
        const doc = await c.findOne({ _id: "a" });
        doc!.tags.push("changed-after-read");
        expect((await c.findOne({ _id: "a" }))!.tags).toEqual(["x"]);
      });

      it("findOne returns null when nothing matches", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", n: 1 });
        expect(await c.findOne({ _id: "b" })).toBeNull();
        expect(await c.findOne({ n: 2 })).toBeNull();
      });

      it("drops undefined fields on insert (absent, not null)", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", gone: undefined, kept: 1 });
        const doc = await c.findOne({ _id: "a" });
        expect(doc).toEqual({ _id: "a", kept: 1 });
        expect("gone" in doc!).toBe(false);
      });

      it("rejects a duplicate _id with DuplicateKeyError", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", v: 1 });
        await expect(c.insertOne({ _id: "a", v: 2 })).rejects.toBeInstanceOf(DuplicateKeyError);
        expect((await c.findOne({ _id: "a" }))!.v).toBe(1);
      });

      it("insertMany inserts all; on a duplicate it keeps the ones before it (ordered) and throws", async () => {
        const c = fresh();
        await c.insertMany([{ _id: "a" }, { _id: "b" }, { _id: "c" }]);
        expect(await c.countDocuments()).toBe(3);
        await expect(c.insertMany([{ _id: "d" }, { _id: "b" }, { _id: "e" }])).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(ids(await c.find({}, { sort: { _id: 1 } }))).toEqual(["a", "b", "c", "d"]);
        await c.insertMany([]); // no-op, no error
      });

      it("bulkWrite runs inserts and (upserting) updates in order and counts them like MongoDB", async () => {
        const c = fresh();
        await c.createIndex({ keys: { email: 1 }, unique: true });
        await c.insertOne({ _id: "a", email: "a@x.io", n: 1 });
        const result = await c.bulkWrite([
          { updateOne: { filter: { email: "a@x.io" }, update: { $set: { n: 2 } }, upsert: true } },
          { updateOne: { filter: { email: "b@x.io" }, update: { $set: { n: 1 }, $setOnInsert: { created: true } }, upsert: true } },
          { updateOne: { filter: { email: "a@x.io" }, update: { $set: { n: 2 } } } },
          { updateOne: { filter: { email: "nobody@x.io" }, update: { $set: { n: 9 } } } },
          { insertOne: { document: { _id: "c", email: "c@x.io", n: 3 } } },
          { updateOne: { filter: { email: "b@x.io" }, update: { $inc: { n: 5 } }, upsert: true } },
        ]);
        expect(result).toMatchObject({ insertedCount: 1, matchedCount: 3, modifiedCount: 2, upsertedCount: 1 });
        expect(Object.keys(result.upsertedIds)).toEqual(["1"]);
        const b = await c.findOne({ email: "b@x.io" });
        expect(b).toEqual({ _id: result.upsertedIds[1], email: "b@x.io", n: 6, created: true });
        expect(typeof b!._id).toBe("string");
        expect((await c.findOne({ _id: "a" }))!.n).toBe(2);
        expect(await c.bulkWrite([])).toEqual({ insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} });
      });

      it("bulkWrite stops at a duplicate key: the operations before it stay, the rest do not run", async () => {
        const c = fresh();
        await c.createIndex({ keys: { email: 1 }, unique: true });
        await c.insertOne({ _id: "a", email: "a@x.io" });
        await expect(
          c.bulkWrite([
            { updateOne: { filter: { _id: "b" }, update: { $set: { email: "b@x.io" } }, upsert: true } },
            { updateOne: { filter: { _id: "b" }, update: { $set: { email: "a@x.io" } } } },
            { insertOne: { document: { _id: "c", email: "c@x.io" } } },
          ]),
        ).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "a", email: "a@x.io" },
          { _id: "b", email: "b@x.io" },
        ]);
      });

      it("bulkWrite's run of inserts stops at a duplicate inside it: the inserts before it stay, the rest do not run", async () => {
        const c = fresh();
        await c.createIndex({ keys: { email: 1 }, unique: true });
        await c.insertOne({ _id: "a", email: "a@x.io" });
        await expect(
          c.bulkWrite([
            { insertOne: { document: { _id: "b", email: "b@x.io" } } },
            { insertOne: { document: { _id: "c", email: "c@x.io" } } },
            { insertOne: { document: { _id: "d", email: "a@x.io" } } },
            { insertOne: { document: { _id: "e", email: "e@x.io" } } },
            { updateOne: { filter: { _id: "a" }, update: { $set: { n: 1 } } } },
          ]),
        ).rejects.toBeInstanceOf(DuplicateKeyError);
        expect(await c.find({}, { sort: { _id: 1 } })).toEqual([
          { _id: "a", email: "a@x.io" },
          { _id: "b", email: "b@x.io" },
          { _id: "c", email: "c@x.io" },
        ]);
        const many = Array.from({ length: 1_500 }, (_, i) => ({ insertOne: { document: { _id: `m${String(i).padStart(4, "0")}`, email: `m${i}@x.io` } } }));
        expect(await c.bulkWrite(many)).toMatchObject({ insertedCount: 1_500 });
        expect(await c.countDocuments({})).toBe(1_503);
      });

      it("rejects undefined filter values instead of matching everything", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", tenantId: "t1" });
        await expect(c.find({ tenantId: undefined })).rejects.toThrow(/undefined/);
        await expect(c.countDocuments({ $or: [{ tenantId: undefined }] })).rejects.toThrow(/undefined/);
        await expect(c.updateMany({ tenantId: { $eq: undefined } }, { $set: { x: 1 } })).rejects.toThrow(/undefined/);
        await expect(c.deleteMany({ tenantId: undefined })).rejects.toThrow(/undefined/);
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", tenantId: "t1" });
      });

      it("keeps U+0000 (and U+0001) in values, field names and _ids: stored, matched, sorted and unique as they are", async () => {
        const c = fresh();
        await c.createIndex({ keys: { name: 1 }, unique: true });
        const docs: Item[] = [
          { _id: "a\u0000", name: "x\u0000y", tags: ["\u0000", "t"], "k\u0000ey": "v\u0001", nested: { s: "\u0001\u0000" } },
          { _id: "a\u0001", name: "x\u0001y", tags: ["\u0001"] },
          { _id: "a", name: "x" },
          { _id: "a\u0002", name: "x\u0000" },
          // What the escaping writes for "x\u0000", and a backslash before a NUL and before "u0000" (JSON's escape in text).
          { _id: "b", name: "x\u0001\u0001", raw: "\\u0000", slash: "\\\u0000" },
        ];
        await c.insertMany(docs.slice(0, 3));
        for (const d of docs.slice(3)) await c.insertOne(d);
        expect(await c.findOne({ _id: "a\u0000" })).toEqual(docs[0]);
        expect(await c.findOne({ _id: "b" })).toEqual(docs[4]);
        expect(ids(await c.find({}, { sort: { _id: 1 } }))).toEqual(["a", "a\u0000", "a\u0001", "a\u0002", "b"]);
        expect(ids(await c.find({ _id: { $gt: "a", $lt: "a\u0002" } }, { sort: { _id: 1 } }))).toEqual(["a\u0000", "a\u0001"]);
        expect(ids(await c.find({ _id: { $in: ["a\u0001", "a\u0000\u0000"] } }))).toEqual(["a\u0001"]);
        // Equality tells each apart from the others (and from what its escaped form would be).
        expect(ids(await c.find({ name: "x\u0000" }))).toEqual(["a\u0002"]);
        expect(ids(await c.find({ name: "x\u0001\u0001" }))).toEqual(["b"]);
        expect(ids(await c.find({ name: "x\u0001y" }))).toEqual(["a\u0001"]);
        expect(ids(await c.find({ tags: "\u0000" }))).toEqual(["a\u0000"]);
        expect(ids(await c.find({ name: { $in: ["x\u0000y", "x"] } }, { sort: { _id: 1 } }))).toEqual(["a", "a\u0000"]);
        expect(ids(await c.find({ "k\u0000ey": "v\u0001" }))).toEqual(["a\u0000"]);
        expect(ids(await c.find({ "nested.s": "\u0001\u0000" }))).toEqual(["a\u0000"]);
        expect(ids(await c.find({ raw: "\\u0000", slash: "\\\u0000" }))).toEqual(["b"]);
        // Code point order: "x" < "x\u0000" < "x\u0000y" < "x\u0001\u0001" < "x\u0001y".
        expect(ids(await c.find({}, { sort: { name: 1 } }))).toEqual(["a", "a\u0002", "a\u0000", "b", "a\u0001"]);
        expect(ids(await c.find({ name: { $gt: "x", $lt: "x\u0001" } }, { sort: { name: -1 } }))).toEqual(["a\u0000", "a\u0002"]);
        await expect(c.insertOne({ _id: "dup", name: "x\u0000" })).rejects.toBeInstanceOf(DuplicateKeyError);
        // Updates: in one statement ($set, $inc, $unset) and read-modify-write ($push).
        expect(await c.updateOne({ _id: "a\u0000", name: "x\u0000y" }, { $set: { "v\u0000": "\u0000\u0000" }, $inc: { "n\u0000": 2 }, $unset: { "k\u0000ey": "" } }))
          .toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        await c.updateOne({ _id: "a\u0000" }, { $push: { tags: "\u0001\u0000" } });
        expect(await c.findOne({ "v\u0000": "\u0000\u0000" }, { projection: { tags: 1, "n\u0000": 1 } })).toEqual({ _id: "a\u0000", tags: ["\u0000", "t", "\u0001\u0000"], "n\u0000": 2 });
        expect(await c.updateMany({ name: { $gte: "x\u0000" } }, { $push: { seen: "\u0000" } })).toMatchObject({ matchedCount: 4, modifiedCount: 4 });
        expect(await c.countDocuments({ seen: "\u0000" })).toBe(4);
        expect(await c.deleteOne({ _id: "a\u0001" })).toEqual({ deletedCount: 1 });
        expect(await c.countDocuments({})).toBe(4);
      });
    });

    describe("filters", () => {
      let c: Collection<Item>;
      const d1 = new Date("2024-01-01T00:00:00Z");
      const d2 = new Date("2024-06-01T00:00:00Z");
      beforeAll(async () => {
        c = fresh();
        await c.insertMany([
          { _id: "a", n: 1, s: "apple", at: d1, tags: ["x", "y"], sub: { k: "v1" }, status: "DRAFT", opt: "set" },
          { _id: "b", n: 5, s: "banana", at: d2, tags: ["y"], sub: { k: "v2" }, status: "SCHEDULED", opt: null },
          { _id: "c", n: 10, s: "cherry", tags: [], sub: { k: "v1" }, status: "SENT" },
          { _id: "d", n: 5, s: "date", items: [{ sku: "p1", qty: 2 }, { sku: "p2", qty: 1 }], status: "DRAFT" },
        ]);
      });
      const match = async (filter: Record<string, unknown>) => ids(await c.find(filter, { sort: { _id: 1 } }));

      it("equality, dotted paths, array membership and sub-documents in arrays", async () => {
        expect(await match({})).toEqual(["a", "b", "c", "d"]);
        expect(await match({ n: 5 })).toEqual(["b", "d"]);
        expect(await match({ n: 5, status: "DRAFT" })).toEqual(["d"]);
        expect(await match({ "sub.k": "v1" })).toEqual(["a", "c"]);
        expect(await match({ sub: { k: "v2" } })).toEqual(["b"]);
        expect(await match({ tags: "y" })).toEqual(["a", "b"]);
        expect(await match({ tags: ["x", "y"] })).toEqual(["a"]);
        expect(await match({ "items.sku": "p2" })).toEqual(["d"]);
        expect(await match({ at: d2 })).toEqual(["b"]);
        expect(await match({ _id: "zzz" })).toEqual([]);
      });

      it("$eq and $ne (including missing fields and arrays)", async () => {
        expect(await match({ status: { $eq: "SENT" } })).toEqual(["c"]);
        expect(await match({ status: { $ne: "DRAFT" } })).toEqual(["b", "c"]);
        expect(await match({ at: { $ne: d1 } })).toEqual(["b", "c", "d"]);
        expect(await match({ tags: { $ne: "x" } })).toEqual(["b", "c", "d"]);
      });

      it("null matches missing and null; $ne null means present and not null", async () => {
        expect(await match({ opt: null })).toEqual(["b", "c", "d"]);
        expect(await match({ opt: { $ne: null } })).toEqual(["a"]);
        expect(await match({ opt: { $eq: null } })).toEqual(["b", "c", "d"]);
      });

      it("$gt/$gte/$lt/$lte on numbers, strings and Dates (type-bracketed)", async () => {
        expect(await match({ n: { $gt: 5 } })).toEqual(["c"]);
        expect(await match({ n: { $gte: 5 } })).toEqual(["b", "c", "d"]);
        expect(await match({ n: { $lt: 5 } })).toEqual(["a"]);
        expect(await match({ n: { $lte: 5, $gt: 1 } })).toEqual(["b", "d"]);
        expect(await match({ s: { $gt: "b", $lt: "d" } })).toEqual(["b", "c"]);
        expect(await match({ at: { $lt: new Date("2024-03-01T00:00:00Z") } })).toEqual(["a"]);
        expect(await match({ at: { $gte: d1 } })).toEqual(["a", "b"]);
        expect(await match({ s: { $gt: 3 } })).toEqual([]); // strings never compare with numbers
        expect(await match({ "items.qty": { $gt: 1 } })).toEqual(["d"]);
      });

      it("$in and $nin", async () => {
        expect(await match({ status: { $in: ["DRAFT", "SENT"] } })).toEqual(["a", "c", "d"]);
        expect(await match({ tags: { $in: ["x"] } })).toEqual(["a"]);
        expect(await match({ status: { $nin: ["DRAFT", "SENT"] } })).toEqual(["b"]);
        expect(await match({ tags: { $nin: ["y"] } })).toEqual(["c", "d"]);
        expect(await match({ opt: { $in: [null, "set"] } })).toEqual(["a", "b", "c", "d"]);
        expect(await match({ _id: { $in: [] } })).toEqual([]);
      });

      it("$in and $nin with long lists (array fields, types kept apart, a list changed between queries)", async () => {
        const ids = ["zz1", "zz2", "c", "zz3", "a", "zz4"];
        expect(await match({ _id: { $in: ids } })).toEqual(["a", "c"]);
        expect(await match({ tags: { $in: ["q1", "q2", "q3", "q4", "y"] } })).toEqual(["a", "b"]);
        expect(await match({ n: { $in: ["5", "1", "7", "9", "11"] } })).toEqual([]); // strings never equal numbers
        expect(await match({ n: { $in: [5, 90, 91, 92, 93] } })).toEqual(["b", "d"]);
        expect(await match({ status: { $nin: ["DRAFT", "SENT", "x1", "x2", "x3"] } })).toEqual(["b"]);
        ids.push("b");
        expect(await match({ _id: { $in: ids } })).toEqual(["a", "b", "c"]);
      });

      it("$exists", async () => {
        expect(await match({ at: { $exists: true } })).toEqual(["a", "b"]);
        expect(await match({ at: { $exists: false } })).toEqual(["c", "d"]);
        expect(await match({ opt: { $exists: true } })).toEqual(["a", "b"]); // null counts as present
        expect(await match({ tags: { $exists: true } })).toEqual(["a", "b", "c"]); // even an empty array
        expect(await match({ "sub.k": { $exists: false } })).toEqual(["d"]);
      });

      it("$or and $and, nested", async () => {
        expect(await match({ $or: [{ n: 1 }, { status: "SENT" }] })).toEqual(["a", "c"]);
        expect(await match({ $and: [{ n: { $gte: 5 } }, { status: { $ne: "SENT" } }] })).toEqual(["b", "d"]);
        expect(await match({ status: "DRAFT", $or: [{ tags: "x" }, { "items.sku": "p1" }] })).toEqual(["a", "d"]);
        expect(await match({ $and: [{ $or: [{ n: 1 }, { n: 10 }] }, { $or: [{ s: "cherry" }, { s: "date" }] }] })).toEqual(["c"]);
      });
    });

    describe("find options and paging", () => {
      let c: Collection<Item>;
      beforeAll(async () => {
        c = fresh();
        const docs: Item[] = [];
        for (let i = 0; i < 25; i++) {
          docs.push({ _id: `id_${String(i).padStart(2, "0")}`, group: i % 3, rank: 25 - i, name: `n${i}`, secret: "s" });
        }
        await c.insertMany([...docs].reverse()); // insertion order must not matter
      });

      it("sorts ascending, descending and by several keys", async () => {
        expect(ids(await c.find({}, { sort: { _id: 1 }, limit: 3 }))).toEqual(["id_00", "id_01", "id_02"]);
        expect(ids(await c.find({}, { sort: { rank: 1 }, limit: 2 }))).toEqual(["id_24", "id_23"]);
        expect(ids(await c.find({}, { sort: { _id: -1 }, limit: 2 }))).toEqual(["id_24", "id_23"]);
        const multi = await c.find({ rank: { $gt: 18 } }, { sort: { group: -1, rank: 1 } });
        expect(multi.map((d) => [d.group, d.rank])).toEqual([[2, 20], [2, 23], [1, 21], [1, 24], [0, 19], [0, 22], [0, 25]]);
      });

      it("skip and limit", async () => {
        expect(ids(await c.find({}, { sort: { _id: 1 }, skip: 5, limit: 2 }))).toEqual(["id_05", "id_06"]);
        expect(await c.find({}, { sort: { _id: 1 }, skip: 30 })).toEqual([]);
        expect((await c.find({})).length).toBe(25);
      });

      it("findOne honours sort and skip", async () => {
        expect((await c.findOne({ group: 1 }, { sort: { rank: 1 } }))!._id).toBe("id_22");
        expect((await c.findOne({}, { sort: { _id: -1 }, skip: 1 }))!._id).toBe("id_23");
      });

      it("projection includes or excludes fields", async () => {
        expect(await c.find({ _id: "id_03" }, { projection: { name: 1 } })).toEqual([{ _id: "id_03", name: "n3" }]);
        expect(await c.find({ _id: "id_03" }, { projection: { name: 1, _id: 0 } })).toEqual([{ name: "n3" }]);
        expect(await c.findOne({ _id: "id_03" }, { projection: { secret: 0, rank: 0 } })).toEqual({ _id: "id_03", group: 0, name: "n3" });
      });

      it("a projection of indexed fields (a covered read) gives what the unprojected find gives", async () => {
        const d = fresh();
        await d.createIndex({ keys: { ws: 1, kind: 1, last: 1 } });
        const at = (n: number) => new Date(Date.UTC(2026, 0, 1 + n));
        const long = "x".repeat(250);
        await d.insertMany([
          ...Array.from({ length: 30 }, (_, i) => ({ _id: `w1:opened:c${String(i).padStart(2, "0")}`, ws: "w1", kind: i % 3 ? "opened" : "clicked", last: at(i % 10), count: i })),
          { _id: "w1:opened:long", ws: "w1", kind: long, last: at(3), count: 1 },
          { _id: "w1:opened:none", ws: "w1", kind: null, count: 1 },
          { _id: "w2:opened:c00", ws: "w2", kind: "opened", last: at(5), count: 1 },
        ]);
        const same = async (filter: Record<string, unknown>, projection: Record<string, 0 | 1>, opts: { sort?: Record<string, 1 | -1>; skip?: number; limit?: number } = {}) => {
          const whole = await d.find(filter, opts);
          const keep = Object.keys(projection).filter((k) => projection[k] && k !== "_id");
          const want = whole.map((doc) => Object.fromEntries([...(projection._id === 0 ? [] : [["_id", doc._id]]), ...keep.filter((k) => doc[k] !== undefined).map((k) => [k, doc[k]])]));
          const got = await d.find(filter, { ...opts, projection });
          expect(got).toEqual(want);
          return got;
        };
        // The documents tree: an _id range, an _id list, a cursor in the list.
        expect((await same({ _id: { $gt: "w1:opened:", $lt: "w1:opened:\uffff" } }, { _id: 1 }, { sort: { _id: 1 }, limit: 7 })).length).toBe(7);
        await same({ _id: { $gte: "w1:opened:c05", $lte: "w1:opened:c09" } }, { _id: 1 }, { sort: { _id: -1 } });
        const list = ["w1:opened:c03", "w1:opened:c01", "nope", "w1:opened:c20", "w1:opened:c01", "w1:opened:c07"];
        expect((await same({ _id: { $in: list } }, { _id: 1 }, { sort: { _id: 1 } })).map((x) => x._id)).toEqual(["w1:opened:c01", "w1:opened:c03", "w1:opened:c07", "w1:opened:c20"]);
        await same({ _id: { $in: list, $gt: "w1:opened:c03" } }, { _id: 1 }, { sort: { _id: 1 }, limit: 1 });
        // An index: equality, a range, the sort, values the key holds (a Date) and cannot (a long string, null).
        await same({ ws: "w1", kind: "opened", last: { $gte: at(4) } }, { _id: 1, last: 1 }, { sort: { last: 1, _id: 1 } });
        await same({ ws: "w1", kind: "opened", last: { $gt: at(4), $lt: at(8) } }, { _id: 1 }, { sort: { last: 1, _id: 1 }, skip: 2, limit: 3 });
        await same({ ws: "w1", kind: { $in: ["clicked", long] } }, { _id: 1, kind: 1, last: 1 }, { sort: { _id: 1 } });
        await same({ ws: "w1", kind: null }, { _id: 1, kind: 1, last: 1 });
        await same({ ws: "w1", kind: "opened" }, { _id: 1, count: 1 }, { sort: { _id: 1 } });
        await same({ ws: "w2" }, { ws: 1, _id: 0 });
      });

      it("pages with {_id: {$gt: cursor}} sorted by _id", async () => {
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        for (; pages < 10; pages++) {
          const filter = cursor ? { group: { $ne: 1 }, _id: { $gt: cursor } } : { group: { $ne: 1 } };
          const page = await c.find(filter, { sort: { _id: 1 }, limit: 4 });
          if (page.length === 0) break;
          seen.push(...ids(page));
          cursor = page[page.length - 1]._id;
        }
        const expected = Array.from({ length: 25 }, (_, i) => i).filter((i) => i % 3 !== 1).map((i) => `id_${String(i).padStart(2, "0")}`);
        expect(seen).toEqual(expected);
        expect(pages).toBe(Math.ceil(expected.length / 4));
      });

      it("countDocuments with and without a filter", async () => {
        expect(await c.countDocuments()).toBe(25);
        expect(await c.countDocuments({})).toBe(25);
        expect(await c.countDocuments({ group: 0 })).toBe(9);
        expect(await c.countDocuments({ rank: { $gt: 20 }, group: { $in: [1, 2] } })).toBe(3);
        expect(await fresh().countDocuments()).toBe(0);
      });
    });

    describe("updates", () => {
      it("$set top-level and dotted paths (creating intermediate objects)", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", name: "x", stats: { sent: 1 } });
        const r = await c.updateOne({ _id: "a" }, { $set: { name: "y", "stats.opened": 2, "meta.source.kind": "api", when: new Date(5) } });
        expect(r).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        expect(r.upsertedId).toBeUndefined();
        const doc = await c.findOne({ _id: "a" });
        expect(doc).toEqual({ _id: "a", name: "y", stats: { sent: 1, opened: 2 }, meta: { source: { kind: "api" } }, when: new Date(5) });
        expect(doc!.when).toBeInstanceOf(Date);
      });

      it("reports modifiedCount 0 when the update changes nothing", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", name: "x" });
        expect(await c.updateOne({ _id: "a" }, { $set: { name: "x" } })).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
        expect(await c.updateOne({ _id: "missing" }, { $set: { name: "x" } })).toEqual({ matchedCount: 0, modifiedCount: 0 });
        expect(await c.countDocuments()).toBe(1);
      });

      it("$unset removes top-level and dotted fields", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", keep: 1, drop: 2, nested: { x: 1, y: 2 } });
        await c.updateOne({ _id: "a" }, { $unset: { drop: "", "nested.y": 1, notThere: "" } });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", keep: 1, nested: { x: 1 } });
      });

      it("$inc increments existing, missing and dotted counters", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", n: 5, stats: { sent: 1 } });
        await c.updateOne({ _id: "a" }, { $inc: { n: -2, fresh: 3, "stats.sent": 10, "stats.bounced": 1 } });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", n: 3, fresh: 3, stats: { sent: 11, bounced: 1 } });
        const increments = Array.from({ length: 20 }, () => c.updateOne({ _id: "a" }, { $inc: { n: 1 } }));
        await Promise.all(increments);
        expect((await c.findOne({ _id: "a" }))!.n).toBe(23);
      });

      it("$inc on a non-number fails and leaves the document unchanged", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", s: "text" });
        await expect(c.updateOne({ _id: "a" }, { $inc: { s: 1 } })).rejects.toThrow();
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", s: "text" });
      });

      it("$push appends to existing or missing arrays, with $each and $slice", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", events: [{ t: "sent" }] });
        await c.updateOne({ _id: "a" }, { $push: { events: { t: "opened", at: new Date(7) }, "log.lines": "first" } });
        let doc = await c.findOne({ _id: "a" });
        expect(doc).toEqual({ _id: "a", events: [{ t: "sent" }, { t: "opened", at: new Date(7) }], log: { lines: ["first"] } });
        await c.updateOne({ _id: "a" }, { $push: { "log.lines": { $each: ["2", "3", "4"], $slice: -3 } } });
        doc = await c.findOne({ _id: "a" });
        expect(doc!.log.lines).toEqual(["2", "3", "4"]);
      });

      it("rejects an empty update and conflicting paths", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", n: 1 });
        await expect(c.updateOne({ _id: "a" }, {})).rejects.toThrow();
        await expect(c.updateOne({ _id: "a" }, { $set: { n: 2 }, $inc: { n: 1 } })).rejects.toThrow();
        await expect(c.updateOne({ _id: "a" }, { $set: { a: 1, "a.b": 2 } })).rejects.toThrow();
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", n: 1 });
      });

      it("updateMany updates every match and only matches", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "a", status: "QUEUED", tenant: "t1" },
          { _id: "b", status: "QUEUED", tenant: "t1" },
          { _id: "c", status: "QUEUED", tenant: "t2" },
          { _id: "d", status: "SENT", tenant: "t1" },
        ]);
        const r = await c.updateMany({ tenant: "t1", status: "QUEUED" }, { $set: { status: "CANCELED" }, $inc: { version: 1 } });
        expect(r).toEqual({ matchedCount: 2, modifiedCount: 2 });
        const docs = await c.find({}, { sort: { _id: 1 } });
        expect(docs.map((d) => [d._id, d.status, d.version])).toEqual([
          ["a", "CANCELED", 1],
          ["b", "CANCELED", 1],
          ["c", "QUEUED", undefined],
          ["d", "SENT", undefined],
        ]);
        expect(await c.updateMany({ tenant: "t3" }, { $set: { x: 1 } })).toEqual({ matchedCount: 0, modifiedCount: 0 });
      });

      it("upsert inserts filter equalities + $set + $setOnInsert once, then only $set applies", async () => {
        const c = fresh();
        const first = await c.updateOne(
          { _id: "k1", tenant: "t1", kind: { $eq: "daily" }, n: { $gt: 0 } },
          { $set: { total: 1 }, $setOnInsert: { createdAt: new Date(1000), origin: "upsert" }, $inc: { hits: 1 } },
          { upsert: true },
        );
        expect(first).toEqual({ matchedCount: 0, modifiedCount: 0, upsertedId: "k1" });
        expect(await c.findOne({ _id: "k1" })).toEqual({ _id: "k1", tenant: "t1", kind: "daily", total: 1, hits: 1, createdAt: new Date(1000), origin: "upsert" });

        const second = await c.updateOne(
          { _id: "k1", tenant: "t1" },
          { $set: { total: 2 }, $setOnInsert: { createdAt: new Date(9999), origin: "again" }, $inc: { hits: 1 } },
          { upsert: true },
        );
        expect(second).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        expect(second.upsertedId).toBeUndefined();
        expect(await c.findOne({ _id: "k1" })).toEqual({ _id: "k1", tenant: "t1", kind: "daily", total: 2, hits: 2, createdAt: new Date(1000), origin: "upsert" });
        expect(await c.countDocuments()).toBe(1);
      });

      it("upsert without an _id in the filter generates a string _id", async () => {
        const c = fresh();
        const r = await c.updateOne({ email: "a@example.com" }, { $setOnInsert: { status: "new" } }, { upsert: true });
        expect(typeof r.upsertedId).toBe("string");
        const doc = await c.findOne({ email: "a@example.com" });
        expect(doc).toEqual({ _id: r.upsertedId, email: "a@example.com", status: "new" });
        expect(typeof doc!._id).toBe("string");
      });

      it("never changes _id", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", n: 1 });
        await expect(c.updateOne({ _id: "a" }, { $set: { _id: "b" } })).rejects.toThrow();
        expect(ids(await c.find({}))).toEqual(["a"]);
      });
    });

    describe("$addToSet and $pull", () => {
      it("$addToSet adds a value once (no duplicate), creates a missing array, and takes $each", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", groups: ["g1"], nested: {} });
        expect(await c.updateOne({ _id: "a" }, { $addToSet: { groups: "g2" } })).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        expect(await c.updateOne({ _id: "a" }, { $addToSet: { groups: "g1" } })).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
        expect((await c.findOne({ _id: "a" }))!.groups).toEqual(["g1", "g2"]);
        await c.updateOne({ _id: "a" }, { $addToSet: { groups: { $each: ["g2", "g3", "g3", "g4"] }, "nested.list": 1, fresh: { $each: [] } } });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", groups: ["g1", "g2", "g3", "g4"], nested: { list: [1] }, fresh: [] });
        // Values of different types are different members; sub-documents compare whole.
        await c.updateOne({ _id: "a" }, { $addToSet: { "nested.list": { $each: ["1", 1, { k: 1 }, { k: 1 }, { k: 2 }] } } });
        expect((await c.findOne({ _id: "a" }))!.nested.list).toEqual([1, "1", { k: 1 }, { k: 2 }]);
      });

      it("$pull removes equal values, or those in $in; on a missing field it does nothing", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", groups: ["g1", "g2", "g3", "g2", "g4"], items: [{ sku: "p1", qty: 1 }, { sku: "p2", qty: 2 }], n: [1, "1", 2] });
        expect(await c.updateOne({ _id: "a" }, { $pull: { groups: "g2" } })).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
        expect((await c.findOne({ _id: "a" }))!.groups).toEqual(["g1", "g3", "g4"]);
        expect(await c.updateOne({ _id: "a" }, { $pull: { groups: "g9" } })).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
        await c.updateOne({ _id: "a" }, { $pull: { groups: { $in: ["g1", "g4", "g9"] }, n: 1, items: { sku: "p1" } } });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", groups: ["g3"], items: [{ sku: "p2", qty: 2 }], n: ["1", 2] });
        expect(await c.updateOne({ _id: "a" }, { $pull: { missing: "x", "nested.list": { $in: ["x"] } } })).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", groups: ["g3"], items: [{ sku: "p2", qty: 2 }], n: ["1", 2] });
        await c.updateOne({ _id: "a" }, { $pull: { groups: "g3" } });
        expect((await c.findOne({ _id: "a" }))!.groups).toEqual([]);
      });

      it("both refuse a field that is not an array, leaving the document unchanged", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", s: "text" });
        await expect(c.updateOne({ _id: "a" }, { $addToSet: { s: "x" } })).rejects.toThrow();
        await expect(c.updateOne({ _id: "a" }, { $pull: { s: "x" } })).rejects.toThrow();
        await expect(c.updateOne({ _id: "a" }, { $addToSet: { groups: "x" }, $pull: { groups: "y" } })).rejects.toThrow();
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", s: "text" });
      });

      it("work with updateMany, findOneAndUpdate and upserts", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "a", ws: "w1", groups: ["g1"] },
          { _id: "b", ws: "w1" },
          { _id: "c", ws: "w2", groups: ["g1"] },
        ]);
        expect(await c.updateMany({ ws: "w1" }, { $addToSet: { groups: "g1" } })).toEqual({ matchedCount: 2, modifiedCount: 1 });
        expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d.groups)).toEqual([["g1"], ["g1"], ["g1"]]);
        expect(await c.updateMany({ ws: "w1" }, { $pull: { groups: "g1" } })).toEqual({ matchedCount: 2, modifiedCount: 2 });
        expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d.groups)).toEqual([[], [], ["g1"]]);

        const after = await c.findOneAndUpdate({ _id: "c" }, { $addToSet: { groups: { $each: ["g2", "g1"] } }, $set: { "groupsAddedAt.g2": new Date(5) } });
        expect(after).toEqual({ _id: "c", ws: "w2", groups: ["g1", "g2"], groupsAddedAt: { g2: new Date(5) } });
        const before = await c.findOneAndUpdate({ _id: "c" }, { $pull: { groups: { $in: ["g1"] } } }, { returnDocument: "before" });
        expect(before!.groups).toEqual(["g1", "g2"]);
        expect((await c.findOne({ _id: "c" }))!.groups).toEqual(["g2"]);

        const up = await c.updateOne({ _id: "d", ws: "w3" }, { $addToSet: { groups: { $each: ["g1", "g1", "g2"] } }, $pull: { other: "x" } }, { upsert: true });
        expect(up.upsertedId).toBe("d");
        expect(await c.findOne({ _id: "d" })).toEqual({ _id: "d", ws: "w3", groups: ["g1", "g2"] });
        const upserted = await c.findOneAndUpdate({ _id: "e" }, { $addToSet: { groups: "g5" } }, { upsert: true });
        expect(upserted).toEqual({ _id: "e", groups: ["g5"] });
        await c.bulkWrite([{ updateOne: { filter: { _id: "e" }, update: { $addToSet: { groups: "g6" } } } }, { updateOne: { filter: { _id: "e" }, update: { $pull: { groups: "g5" } } } }]);
        expect((await c.findOne({ _id: "e" }))!.groups).toEqual(["g6"]);
      });

      it("a multikey index follows: found by the added value, no longer by the pulled one", async () => {
        const c = fresh();
        await c.createIndex({ keys: { ws: 1, groups: 1, _id: 1 } });
        await c.insertMany([
          { _id: "a", ws: "w1", groups: ["g1"] },
          { _id: "b", ws: "w1" },
          { _id: "c", ws: "w2", groups: ["g2"] },
        ]);
        const members = async (ws: string, group: string) => ids(await c.find({ ws, groups: group }, { sort: { _id: 1 } }));
        await c.updateOne({ _id: "b" }, { $addToSet: { groups: { $each: ["g1", "g2"] } } });
        expect(await members("w1", "g1")).toEqual(["a", "b"]);
        expect(await members("w1", "g2")).toEqual(["b"]);
        expect(await c.countDocuments({ ws: "w1", groups: "g2" })).toBe(1);
        await c.updateMany({ ws: "w1" }, { $pull: { groups: "g1" } });
        expect(await members("w1", "g1")).toEqual([]);
        expect(await members("w1", "g2")).toEqual(["b"]);
        await c.updateOne({ _id: "b" }, { $pull: { groups: { $in: ["g2"] } } });
        expect(await members("w1", "g2")).toEqual([]);
        expect(await c.countDocuments({ ws: "w1", groups: "g2" })).toBe(0);
        expect(await members("w2", "g2")).toEqual(["c"]);
        await c.findOneAndUpdate({ _id: "a" }, { $addToSet: { groups: "g3" } });
        await c.updateOne({ _id: "z", ws: "w1" }, { $addToSet: { groups: "g3" } }, { upsert: true });
        expect(await members("w1", "g3")).toEqual(["a", "z"]);
        expect(ids(await c.find({ ws: "w1", groups: { $in: ["g1", "g3"] } }, { sort: { _id: 1 } }))).toEqual(["a", "z"]);
      });
    });

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

    describe("findOneAndUpdate", () => {
      it("returns the document after the update by default, or before it on request", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", status: "DRAFT", v: 1 });
        const after = await c.findOneAndUpdate({ _id: "a", status: "DRAFT" }, { $set: { status: "SCHEDULED" }, $inc: { v: 1 } });
        expect(after).toEqual({ _id: "a", status: "SCHEDULED", v: 2 });
        const before = await c.findOneAndUpdate({ _id: "a" }, { $set: { status: "SENT" } }, { returnDocument: "before" });
        expect(before).toEqual({ _id: "a", status: "SCHEDULED", v: 2 });
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", status: "SENT", v: 2 });
      });

      it("returns null and changes nothing when the compare fails", async () => {
        const c = fresh();
        await c.insertOne({ _id: "a", status: "SENT" });
        expect(await c.findOneAndUpdate({ _id: "a", status: "DRAFT" }, { $set: { status: "SCHEDULED" } })).toBeNull();
        expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", status: "SENT" });
      });

      it("picks the first match by sort (claiming the oldest due item)", async () => {
        const c = fresh();
        await c.insertMany([
          { _id: "late", status: "DUE", dueAt: new Date(3000) },
          { _id: "early", status: "DUE", dueAt: new Date(1000) },
          { _id: "done", status: "DONE", dueAt: new Date(500) },
        ]);
        const claimed = await c.findOneAndUpdate(
          { status: "DUE", dueAt: { $lte: new Date(5000) } },
          { $set: { status: "CLAIMED" } },
          { sort: { dueAt: 1 } },
        );
        expect(claimed!._id).toBe("early");
        const next = await c.findOneAndUpdate({ status: "DUE" }, { $set: { status: "CLAIMED" } }, { sort: { dueAt: -1 }, returnDocument: "before" });
        expect(next).toMatchObject({ _id: "late", status: "DUE" });
      });

      it("upserts: after returns the new document, before returns null", async () => {
        const c = fresh();
        const created = await c.findOneAndUpdate({ _id: "x", kind: "k" }, { $setOnInsert: { n: 0 }, $set: { seen: true } }, { upsert: true });
        expect(created).toEqual({ _id: "x", kind: "k", n: 0, seen: true });
        expect(await c.findOneAndUpdate({ _id: "y" }, { $set: { seen: true } }, { upsert: true, returnDocument: "before" })).toBeNull();
        expect(await c.findOne({ _id: "y" })).toEqual({ _id: "y", seen: true });
      });

      it("compare-and-set race: of 50 concurrent A->B transitions exactly one wins", async () => {
        const c = fresh();
        await c.insertOne({ _id: "job", status: "A" });
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => c.findOneAndUpdate({ _id: "job", status: "A" }, { $set: { status: "B", winner: i } })),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        expect(await c.findOne({ _id: "job" })).toEqual({ _id: "job", status: "B", winner: winners[0]!.winner });
      });

      it("claim race: 40 concurrent claimers over 20 items claim each item exactly once", async () => {
        const c = fresh();
        await c.insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: `q${String(i).padStart(2, "0")}`, status: "DUE" })));
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            c.findOneAndUpdate({ status: "DUE" }, { $set: { status: "CLAIMED", by: i } }, { sort: { _id: 1 } }),
          ),
        );
        const claimed = results.filter((r) => r !== null).map((r) => r!._id);
        expect(claimed).toHaveLength(20);
        expect(new Set(claimed).size).toBe(20);
        expect(await c.countDocuments({ status: "DUE" })).toBe(0);
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
        await store.collection<Item>(name).insertOne({ _id: "a" });
        expect(await store.collection<Item>(name).findOne({ _id: "a" })).toEqual({ _id: "a" });
      });
    });
  });
}
