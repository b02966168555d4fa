/** Store contract: filters, find options and paging. */
import { beforeAll, describe, expect, it } from "vitest";
import type { Collection } from "@mailroom/store/port.js";
import type { ContractContext, Item } from "./context.js";

export function describeFilterCases({ fresh, ids }: ContractContext): void {
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
}
