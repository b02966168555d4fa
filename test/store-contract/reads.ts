/** Store contract: findIdSegments, inserts and reads. */
import { describe, expect, it } from "vitest";
import { DuplicateKeyError } from "@mailroom/store/port.js";
import type { ContractContext, Item } from "./context.js";

export function describeReadCases({ fresh, ids }: ContractContext): void {
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
}
