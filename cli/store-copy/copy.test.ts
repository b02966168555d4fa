/**
 * The copy engine on its own, into the in-memory store (the same port the PostgreSQL adapter
 * implements): every document in _id order, a run stopped in the middle of a batch resumed
 * with nothing copied twice beyond that batch, a target it did not start refused.
 * test/ops/store-copy.test.ts runs the command against real units and PostgreSQL.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLmdbStore, type LmdbStore } from "@mailroom/store/lmdb.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Doc, Store } from "@mailroom/store/port.js";
import { copyCollection, planUnit, PROGRESS_COLLECTION } from "./copy.js";

const DOCS = 1_050;
const BATCH = 100;
const doc = (i: number): Doc => ({
  _id: `t_${String(i).padStart(5, "0")}`,
  n: i, at: new Date(1_700_000_000_000 + i), tags: ["a", `t${i % 7}`], nested: { ok: i % 2 === 0, none: null },
});

/** A target whose insertMany into `things` writes half of its `failAt`-th batch, then throws: a run killed mid-write. */
function flakyTarget(inner: Store, failAt: number) {
  let calls = 0;
  const stats = { inserted: 0 };
  const store: Store = {
    kind: "memory-test",
    close: () => inner.close(),
    collection<T extends Doc>(name: string) {
      const coll = inner.collection<T>(name);
      if (name !== "things") return coll;
      const insertMany = async (docs: T[]) => {
        if (++calls === failAt) {
          await coll.insertMany(docs.slice(0, docs.length / 2));
          stats.inserted += docs.length / 2;
          throw new Error("stopped mid-batch");
        }
        await coll.insertMany(docs);
        stats.inserted += docs.length;
      };
      return new Proxy(coll, {
        get: (t, prop) => (prop === "insertMany" ? insertMany : typeof Reflect.get(t, prop) === "function" ? Reflect.get(t, prop).bind(t) : Reflect.get(t, prop)),
      });
    },
  };
  return { store, stats };
}

async function copyUnit(source: LmdbStore, target: Store) {
  const plan = await planUnit("unit", source, target);
  return Promise.all(plan.collections.map((c) => copyCollection(plan, c, BATCH, () => undefined)));
}

describe("store copy engine", () => {
  let dir: string;
  let source: LmdbStore;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-copy-"));
    source = await openLmdbStore({ dir });
    // Inserted out of order: the copy reads them in _id order all the same.
    const all = Array.from({ length: DOCS }, (_, i) => doc(i)).reverse();
    await source.collection("things").insertMany(all);
    await source.collection("empty").createIndex({ keys: { x: 1 } });
  });
  afterAll(async () => {
    await source?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("lists the embedded store's collections", () => {
    expect(source.collectionNames()).toEqual(["empty", "things"]);
  });

  it("copies every document; a run stopped mid-batch resumes after its last recorded batch", async () => {
    const memory = openMemoryStore();
    const { store, stats } = flakyTarget(memory, 4);
    await expect(copyUnit(source, store)).rejects.toThrow("stopped mid-batch");
    // Three batches recorded, half of the fourth written.
    expect(await memory.collection(PROGRESS_COLLECTION).findOne({ _id: "things" })).toMatchObject({ after: "t_00299", copied: 300, done: false });
    expect(await memory.collection("things").countDocuments({})).toBe(350);

    const results = await copyUnit(source, store);
    expect(results.find((r) => r.name === "things")).toEqual({ name: "things", documents: DOCS, copied: DOCS - 300, alreadyDone: false, resumedAfter: "t_00299" });
    expect(await memory.collection("things").find({}, { sort: { _id: 1 } })).toEqual(await source.collection("things").find({}, { sort: { _id: 1 } }));
    // Only the batch in flight was written twice (its first half).
    expect(stats.inserted).toBe(DOCS + BATCH / 2);

    // A third run finds everything done and writes nothing.
    const again = await copyUnit(source, store);
    expect(again.map((r) => [r.name, r.copied, r.alreadyDone])).toEqual([["empty", 0, true], ["things", 0, true]]);
    expect(stats.inserted).toBe(DOCS + BATCH / 2);
  });

  it("refuses a target collection holding documents it did not copy", async () => {
    const memory = openMemoryStore();
    await memory.collection("things").insertOne({ _id: "someone_elses" });
    await expect(planUnit("unit", source, memory)).rejects.toThrow(/unit\.things already holds documents this command did not copy/);
  });
});
