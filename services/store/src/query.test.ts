import { describe, expect, it } from "vitest";
import type { Filter, Update } from "./port.js";
import { applyUpdate, cloneValue, compileFilter, matchesFilter } from "./query.js";

const source = () => ({
  _id: "e1",
  status: "SENT",
  createdAt: new Date("2026-11-01T00:00:00Z"),
  dispatch: "claimed",
  leaseOwner: "w1",
  out: { opens: 1, links: [{ url: "https://a.test", clicks: 2 }], last: { type: "open", at: new Date("2026-11-02T00:00:00Z") } },
  tags: ["a", "b"],
  matrix: [[1, 2], [3]],
});

const updates: [string, Update][] = [
  ["$set and $unset at the top", { $set: { status: "DELIVERED" }, $unset: { dispatch: "", leaseOwner: "" } }],
  ["$set into a nested object", { $set: { "out.last.type": "click" } }],
  ["$set into an array element", { $set: { "out.links.0.clicks": 3 } }],
  ["$set into a nested array", { $set: { "matrix.1.0": 9 } }],
  ["$inc on a nested counter and a new one", { $inc: { "out.opens": 1, "out.clicks": 1 } }],
  ["$unset inside an array", { $unset: { "tags.0": "" } }],
  ["$push onto nested and new arrays", { $push: { "out.links": { url: "https://b.test", clicks: 0 }, "fresh.list": 1 } }],
  ["$set creating a new branch", { $set: { "meta.source.kind": "api" } }],
  ["$addToSet onto nested, top-level and new arrays", { $addToSet: { tags: { $each: ["a", "c"] }, "out.links": { url: "https://b.test", clicks: 0 }, "fresh.set": 1 } }],
  ["$pull from top-level and nested arrays", { $pull: { tags: "a", "out.links": { url: "https://a.test" }, "matrix.0": { $in: [2] } } }],
];

describe("applyUpdate sharing untouched branches", () => {
  it.each(updates)("%s: the same result as a deep copy, and the source unchanged", (_name, update) => {
    const doc = source();
    const before = cloneValue(doc);
    const shared = applyUpdate(doc, update, false, { share: true });
    expect(shared).toEqual(applyUpdate(source(), update, false));
    expect(doc).toEqual(before);
  });

  it("copies only the containers on written paths", () => {
    const doc = source();
    const next = applyUpdate(doc, { $set: { "out.last.type": "click" } }, false, { share: true });
    expect(next).not.toBe(doc);
    expect(next.out).not.toBe(doc.out);
    expect(next.out.last).not.toBe(doc.out.last);
    // Untouched branches are the source's own objects.
    expect(next.out.links).toBe(doc.out.links);
    expect(next.tags).toBe(doc.tags);
    expect(next.createdAt).toBe(doc.createdAt);
  });

  it("writes through the same copy when one update touches a branch twice", () => {
    const doc = source();
    const next = applyUpdate(doc, { $set: { "out.last.type": "click" }, $inc: { "out.opens": 2 } }, false, { share: true });
    expect(next.out).toMatchObject({ opens: 3, last: { type: "click" } });
    expect(doc.out).toMatchObject({ opens: 1, last: { type: "open" } });
  });

  it("refuses what the deep variant refuses, leaving the source alone", () => {
    const doc = source();
    const before = cloneValue(doc);
    expect(() => applyUpdate(doc, { $set: { "status.x": 1 } }, false, { share: true })).toThrow(/non-object/);
    expect(() => applyUpdate(doc, { $inc: { status: 1 } }, false, { share: true })).toThrow(/non-numeric/);
    expect(() => applyUpdate(doc, { $set: { "tags.x": 1 } }, false, { share: true })).toThrow(/array/);
    expect(doc).toEqual(before);
  });
});

describe("compileFilter", () => {
  const docs: Record<string, unknown>[] = [
    source(),
    { _id: "e2", status: "QUEUED", tags: [], out: null, n: 5, when: new Date("2026-11-03T00:00:00Z") },
    { _id: "e3", tags: ["b", null], out: { links: [{ url: "https://b.test", clicks: 0 }, { url: null }] }, n: "5", email: "Ann@Example.test" },
    { _id: "e4", status: null, properties: { plan: "gold", seats: 3, groups: ["g1", "g2"] }, email: "bob@example.test" },
    {},
  ];
  const many = Array.from({ length: 50 }, (_, i) => `e${i}`);
  const filters: Filter[] = [
    {},
    { status: "SENT" },
    { status: null },
    { status: { $ne: null } },
    { status: { $in: ["SENT", "QUEUED"] } },
    { status: { $nin: ["SENT", "QUEUED", "A", "B", "C", "D"] } },
    { _id: { $in: many } },
    { _id: { $in: Object.freeze([...many].sort()) } },
    { tags: "b" },
    { tags: null },
    { tags: { $size: 2 } },
    { "out.links.url": "https://b.test" },
    { "out.links.0.clicks": { $gte: 2 } },
    { "out.last.at": { $lt: new Date("2026-12-01T00:00:00Z") } },
    { "properties.plan": "gold", "properties.seats": { $gt: 1, $lte: 3 } },
    { "properties.groups": { $in: ["g2", "g9"] } },
    { n: { $gte: 5 } },
    { n: { $exists: true } },
    { n: { $exists: false } },
    { email: { $regex: "example\\.test$", $options: "i" } },
    { email: { $regex: /^ann@/i } },
    { email: { $regex: "^bob", $options: "g" } },
    { email: { $options: "i" } },
    { email: { $regex: "(" } },
    { $or: [{ status: "SENT" }, { "properties.plan": "gold" }] },
    { $and: [{ tags: { $exists: true } }, { $nor: [{ tags: "a" }] }] },
    { $nor: [{ status: { $in: ["SENT"] } }] },
    { status: "SENT", $where: "x" },
    { $and: [] },
    { status: { $eq: "QUEUED", $bogus: 1 } },
    { status: { $in: "SENT" } },
  ];
  const outcome = (f: () => boolean) => {
    try {
      return f();
    } catch (err) {
      return `throws ${(err as Error).message}`;
    }
  };

  it.each(filters.map((f) => [JSON.stringify(f), f] as const))("%s: the same answer as matchesFilter for every document", (_name, filter) => {
    const compiled = outcome(() => (compileFilter(filter), true));
    expect(compiled).toBe(true); // compiling never throws: errors come when a document reaches them
    const matches = compileFilter(filter);
    for (const doc of docs) expect(outcome(() => matches(doc))).toEqual(outcome(() => matchesFilter(doc, filter)));
  });

  it("answers the same whether or not documents match (some do, some do not, over the cases)", () => {
    const answers = filters.flatMap((f) => docs.map((d) => outcome(() => matchesFilter(d, f))));
    expect(answers).toContain(true);
    expect(answers).toContain(false);
    expect(answers.some((a) => typeof a === "string")).toBe(true);
  });
});
