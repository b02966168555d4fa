/** Store contract: update operators, $addToSet and $pull, findOneAndUpdate. */
import { describe, expect, it } from "vitest";
import type { ContractContext } from "./context.js";

export function describeUpdateCases({ fresh, ids }: ContractContext): void {
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

    it("$max and $min keep the larger and the smaller value, set a missing field, and apply to an upsert's insert", async () => {
      const c = fresh();
      await c.insertOne({ _id: "a", n: 5, last: new Date(100), first: new Date(100), name: "m" });
      await c.updateOne({ _id: "a" }, { $max: { n: 3, last: new Date(50), name: "z" }, $min: { first: new Date(50), lowest: 7 } });
      expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", n: 5, last: new Date(100), first: new Date(50), name: "z", lowest: 7 });
      expect(await c.updateOne({ _id: "a" }, { $max: { n: 2 }, $min: { lowest: 9 } })).toMatchObject({ matchedCount: 1, modifiedCount: 0 });
      await c.updateOne({ _id: "a" }, { $max: { n: 8, last: new Date(200) }, $inc: { count: 1 } });
      expect(await c.findOne({ _id: "a" })).toMatchObject({ n: 8, last: new Date(200), count: 1 });
      // Upserted: the fields are set as given, beside $setOnInsert's and $inc's.
      const r = await c.updateOne({ _id: "b" }, { $max: { last: new Date(9) }, $min: { first: new Date(9) }, $inc: { count: 2 }, $setOnInsert: { kind: "x" } }, { upsert: true });
      expect(r.upsertedId).toBe("b");
      expect(await c.findOne({ _id: "b" })).toEqual({ _id: "b", last: new Date(9), first: new Date(9), count: 2, kind: "x" });
      // In a bulk write, as the engagement totals use them.
      await c.bulkWrite([
        { updateOne: { filter: { _id: "b" }, update: { $max: { last: new Date(30) }, $min: { first: new Date(3) }, $inc: { count: 1 } }, upsert: true } },
        { updateOne: { filter: { _id: "c" }, update: { $max: { last: new Date(4) }, $inc: { count: 1 } }, upsert: true } },
      ]);
      expect(await c.findOne({ _id: "b" })).toMatchObject({ last: new Date(30), first: new Date(3), count: 3 });
      expect(await c.findOne({ _id: "c" })).toEqual({ _id: "c", last: new Date(4), count: 1 });
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
}
