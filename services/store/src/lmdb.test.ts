import { execFileSync, spawn } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openLmdbStore, planQuery, type IndexDef, type MigrationInfo } from "./lmdb.js";
import { createEmbeddedStore } from "./nedb-legacy.js";
import { openMemoryStore, openStore } from "./open.js";
import { DuplicateKeyError, type Doc, type Filter, type FindOptions, type Update } from "./port.js";

type Row = Doc & Record<string, any>;

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailroom-lmdb-"));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("LMDB store: migration from the old nedb datafiles", () => {
  it("moves every collection once, with its indexes, and renames the old files aside", async () => {
    const dataDir = await tempDir();
    const dir = join(dataDir, "directory");
    // Written by the old adapter, with updates, deletes and index lines in the files.
    await mkdir(dir, { recursive: true });
    const old = createEmbeddedStore({ dir });
    const contacts = old.collection<Row>("contacts");
    await contacts.createIndex({ keys: { workspaceId: 1, email: 1 }, unique: true });
    await contacts.createIndex({ keys: { createdAt: 1 }, expireAfterSeconds: 86_400 * 365 * 100 });
    const at = new Date("2024-02-03T04:05:06.789Z");
    for (let i = 0; i < 50; i++) {
      await contacts.insertOne({ _id: `c${String(i).padStart(2, "0")}`, workspaceId: i % 2 ? "w1" : "w2", email: `u${i}@x.io`, createdAt: at, tags: ["a"] });
    }
    await contacts.updateOne({ _id: "c01" }, { $set: { "profile.name": "Ann" }, $push: { tags: "b" } });
    await contacts.deleteOne({ _id: "c02" });
    await old.collection<Row>("settings").insertOne({ _id: "s", on: true, nested: { list: [1, null, "x"] } });
    const expected = await contacts.find({}, { sort: { _id: 1 } });
    const expectedSettings = await old.collection<Row>("settings").find({});
    // Not closed through close() (which compacts): an un-compacted file with superseded lines.
    await (await import("./nedb-append.js")).closeAppendHandle(join(dir, "contacts.db"));
    await (await import("./nedb-append.js")).closeAppendHandle(join(dir, "settings.db"));

    const migrated: MigrationInfo[] = [];
    const logged: string[] = [];
    const store = await openStore({ dataDir, service: "directory", onMigrate: (m) => migrated.push(m), logger: { info: (m) => logged.push(m) } });
    expect(migrated.map((m) => [m.collection, m.documents]).sort()).toEqual([["contacts", 49], ["settings", 1]]);
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatch(/migrated collection/);
    const c = store.collection<Row>("contacts");
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual(expected);
    expect((await c.findOne({ _id: "c01" }))!.createdAt).toBeInstanceOf(Date);
    expect(await store.collection<Row>("settings").find({})).toEqual(expectedSettings);
    // The unique index came along.
    await expect(c.insertOne({ _id: "dup", workspaceId: "w1", email: "u1@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
    await c.insertOne({ _id: "ok", workspaceId: "w2", email: "u1@x.io" });
    await store.close();
    expect((await readdir(dir)).sort()).toEqual(["contacts.db.migrated", "settings.db.migrated", "store.mdb", "store.mdb-lock"]);

    // Never twice.
    const again: MigrationInfo[] = [];
    const reopened = await openStore({ dataDir, service: "directory", onMigrate: (m) => again.push(m), logger: { info: () => undefined } });
    expect(again).toEqual([]);
    expect(await reopened.collection<Row>("contacts").countDocuments()).toBe(50);
    await reopened.close();
  });
});

describe("LMDB store: crash safety and several processes", () => {
  it("keeps every acknowledged write when the writer is killed with SIGKILL", async () => {
    const dir = await tempDir();
    const fixture = fileURLToPath(new URL("./crash-writer.fixture.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", fixture, "write", dir], { stdio: ["ignore", "pipe", "inherit"] });
    const acknowledged: string[] = [];
    let buffer = "";
    let readerCount = -1;
    await new Promise<void>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", (code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`writer exited early (${code})`))));
      child.stdout.on("data", async (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        for (const line of lines) if (line && line !== "ready") acknowledged.push(line);
        if (acknowledged.length >= 3000 && readerCount < 0) {
          readerCount = 0;
          // A second process reads the same directory while the writer is running.
          const reader = await openLmdbStore({ dir });
          readerCount = await reader.collection<Row>("items").countDocuments();
          await reader.close();
          child.kill("SIGKILL");
        }
      });
    });
    expect(readerCount).toBeGreaterThan(0);
    const store = await openLmdbStore({ dir });
    const items = store.collection<Row>("items");
    const present = new Set((await items.find({}, { projection: { _id: 1 } })).map((d) => d._id));
    const missing = acknowledged.filter((id) => !present.has(id));
    expect(acknowledged.length).toBeGreaterThanOrEqual(3000);
    expect({ missing: missing.length, of: acknowledged.length, present: present.size }).toEqual({ missing: 0, of: acknowledged.length, present: present.size });
    // Indexes are consistent with the documents after the crash.
    const any = await items.findOne({ _id: acknowledged[acknowledged.length - 1] });
    expect((await items.findOne({ n: any!.n }))!._id).toBe(any!._id);
    await store.close();
  }, 60_000);

  it("keeps every acknowledged write while another process opens the directory again and again", async () => {
    // Each opening races the writer's commits (lmdb.ts, "Opening a directory another process is
    // writing"): without the stale-base check this lost a commit (8 acknowledged writes) in each of
    // 3 runs, and the crash test above lost one now and then to its single mid-stream reader.
    const dir = await tempDir();
    const fixture = fileURLToPath(new URL("./crash-writer.fixture.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", fixture, "write", dir], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<void>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", (code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`writer exited early (${code})`))));
    });
    exited.catch(() => undefined); // awaited below
    const acknowledged: string[] = [];
    let buffer = "";
    let started!: () => void;
    const writing = new Promise<void>((resolve) => (started = resolve));
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      for (const line of lines) if (line === "ready") started();
      else if (line) acknowledged.push(line);
    });
    await Promise.race([writing, exited]);
    const running = () => child.exitCode === null && child.signalCode === null;
    for (let i = 0; i < 300 && running(); i++) await (await openLmdbStore({ dir })).close();
    // The writer still gets its writes through afterwards (it is not left waiting on a stale base).
    const after = acknowledged.length;
    while (acknowledged.length < after + 80 && running()) await new Promise((resolve) => setTimeout(resolve, 10));
    child.kill("SIGKILL");
    await exited;
    const store = await openLmdbStore({ dir });
    const present = new Set((await store.collection<Row>("items").find({}, { projection: { _id: 1 } })).map((d) => d._id));
    await store.close();
    expect(acknowledged.length).toBeGreaterThanOrEqual(after + 80);
    expect(acknowledged.filter((id) => !present.has(id))).toEqual([]);
  }, 60_000);

  it("compare-and-set stays atomic between two processes on one directory", async () => {
    const dir = await tempDir();
    const seed = await openLmdbStore({ dir });
    await seed.collection<Row>("counters").insertOne({ _id: "c", n: 0, by: [] });
    await seed.close();
    const fixture = fileURLToPath(new URL("./crash-writer.fixture.ts", import.meta.url));
    let ready = 0;
    const run = (name: string) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ["--import", "tsx", fixture, "claim", dir, name, "300"], { stdio: ["ignore", "pipe", "inherit"] });
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.startsWith("ready\n") && !out.includes("counted")) {
            out = out.replace("ready\n", "counted\n");
            if (++ready === 2) void writeFile(join(dir, "go"), "");
          }
        });
        child.on("error", reject);
        child.on("exit", (code) => (code === 0 ? resolve(out.replace("counted\n", "").trim()) : reject(new Error(`claimer ${name} exited with ${code}`))));
      });
    const outputs = await Promise.all([run("a"), run("b")]);
    for (const out of outputs) expect(out).toMatch(/^done \d+$/);
    // They did race: at least one compare failed somewhere and was retried.
    expect(outputs.map((o) => Number(o.split(" ")[1])).reduce((a, b) => a + b)).toBeGreaterThan(0);
    const store = await openLmdbStore({ dir });
    const counter = (await store.collection<Row>("counters").findOne({ _id: "c" }))!;
    // Every increment that reported success is there exactly once: no lost updates.
    expect(counter.n).toBe(600);
    expect(counter.by.filter((b: string) => b === "a")).toHaveLength(300);
    expect(counter.by.filter((b: string) => b === "b")).toHaveLength(300);
    await store.close();
  }, 60_000);
});

describe("LMDB store: query planning", () => {
  const indexes: IndexDef[] = [
    { no: 1, fields: ["workspaceId", "email"], unique: true, sparse: false },
    { no: 2, fields: ["workspaceId", "_id"], unique: false, sparse: false },
    { no: 3, fields: ["status", "sendAt"], unique: false, sparse: false },
    { no: 4, fields: ["workspaceId", "key"], unique: true, sparse: false },
  ];
  it("answers the hot queries from an index, in the requested order", () => {
    expect(planQuery({ workspaceId: "w", email: "a@x.io" }, undefined, indexes)).toMatchObject({ kind: "index", index: { no: 1 } });
    expect(planQuery({ workspaceId: "w", key: "k" }, undefined, indexes)).toMatchObject({ kind: "index", index: { no: 4 } });
    expect(planQuery({ workspaceId: "w", subscribed: true, _id: { $gt: "c" } }, { _id: 1 }, indexes)).toMatchObject({
      kind: "index",
      index: { no: 2 },
      ordered: true,
    });
    expect(planQuery({ status: "SCHEDULED", sendAt: { $lte: new Date() } }, { sendAt: 1 }, indexes)).toMatchObject({
      kind: "index",
      index: { no: 3 },
      ordered: true,
    });
    expect(planQuery({ _id: "x", workspaceId: "w" }, undefined, indexes)).toMatchObject({ kind: "ids" });
    expect(planQuery({ subscribed: true }, { _id: -1 }, indexes)).toMatchObject({ kind: "primary", ordered: true, reverse: true });
  });

  it("gives the same answers as the in-memory store on random data and filters, before and after random updates", async () => {
    const lmdb = await openLmdbStore({ dir: await tempDir() });
    const memory = openMemoryStore();
    const a = lmdb.collection<Row>("r");
    const b = memory.collection<Row>("r");
    for (const c of [a, b]) {
      await c.createIndex({ keys: { g: 1, n: 1 } });
      await c.createIndex({ keys: { s: 1 } });
      await c.createIndex({ keys: { tags: 1 } });
      await c.createIndex({ keys: { at: 1 } });
      await c.createIndex({ keys: { g: 1, _id: 1 } });
    }
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; // high bits: the low bits of an LCG cycle
      return Math.floor((seed / 2 ** 32) * n);
    };
    const docs: Row[] = [];
    for (let i = 0; i < 300; i++) {
      const doc: Row = { _id: `id${String(rand(10_000)).padStart(5, "0")}_${i}`, g: `g${rand(4)}` };
      if (rand(5)) doc.n = rand(3) ? rand(50) : `${rand(50)}`;
      if (rand(4)) doc.s = ["a", "b", "c", null, true, 3][rand(6)];
      if (rand(3)) doc.tags = Array.from({ length: rand(3) }, () => `t${rand(5)}`);
      if (rand(2)) doc.at = new Date(1_700_000_000_000 + rand(1000) * 1000);
      docs.push(doc);
    }
    await a.insertMany(docs);
    await b.insertMany(docs);
    const filters: [Filter, FindOptions][] = [];
    for (let i = 0; i < 300; i++) {
      const f: Filter = {};
      if (rand(2)) f.g = `g${rand(4)}`;
      const choice = rand(9);
      if (choice === 0) f.n = rand(50);
      if (choice === 1) f.n = { $gte: rand(50), $lt: rand(60) };
      if (choice === 2) f.n = { $in: [rand(50), `${rand(50)}`, rand(50)] };
      if (choice === 3) f.tags = `t${rand(5)}`;
      if (choice === 4) f.s = ["a", "b", null, true, 3][rand(5)];
      if (choice === 5) f.at = { $gt: new Date(1_700_000_000_000 + rand(1000) * 1000) };
      if (choice === 6) f._id = { $gt: `id${String(rand(10_000)).padStart(5, "0")}` };
      if (choice === 7) f.$or = [{ s: "a" }, { n: { $lt: 10 } }];
      if (choice === 8) f.s = { $gte: "b" };
      // Sorts on fields of one type (or missing): nedb orders mixed types differently from MongoDB.
      const sorts: FindOptions["sort"][] = [{ _id: 1 }, { _id: -1 }, { at: -1, _id: 1 }, { g: 1, _id: -1 }, { g: -1, at: 1, _id: 1 }];
      const opts: FindOptions = { sort: sorts[rand(sorts.length)] };
      if (rand(2)) opts.limit = 1 + rand(20);
      if (rand(3) === 0) opts.skip = rand(10);
      filters.push([f, opts]);
    }
    const compare = async () => {
      for (const [f, opts] of filters) {
        const expected = (await b.find(f, opts)).map((d) => d._id);
        const got = (await a.find(f, opts)).map((d) => d._id);
        expect({ f, opts, got }).toEqual({ f, opts, got: expected });
        expect(await a.countDocuments(f)).toBe(await b.countDocuments(f));
      }
    };
    await compare();
    // Index entries follow updates: indexed values that change (type included: 7 and "7",
    // null and missing), and updates that leave every indexed field alone.
    for (let i = 0; i < 400; i++) {
      const doc = docs[rand(docs.length)]!;
      const updates: Update[] = [
        { $set: { n: rand(3) ? rand(50) : `${rand(50)}` } },
        { $set: { s: ["a", "b", "c", null, true, 3][rand(6)] } },
        { $unset: { s: "" } },
        { $push: { tags: `t${rand(5)}` } },
        { $set: { at: new Date(1_700_000_000_000 + rand(1000) * 1000) } },
        { $set: { note: `n${rand(100)}` } },
        { $set: { g: `g${rand(4)}`, note: "moved" } },
      ];
      const update = updates[rand(updates.length)]!;
      await a.updateOne({ _id: doc._id }, update);
      await b.updateOne({ _id: doc._id }, update);
    }
    await compare();
    await lmdb.close();
    await memory.close();
  });
});

describe("LMDB store: wildcard index over a sub-document", () => {
  const indexes: IndexDef[] = [
    { no: 1, fields: ["workspaceId", "emailLower"], unique: true, sparse: false, compactTags: true },
    { no: 2, fields: ["workspaceId", "_id"], unique: false, sparse: false, idTail: true, compactTags: true },
    { no: 3, fields: ["workspaceId", "status", "_id"], unique: false, sparse: false, idTail: true, compactTags: true },
    { no: 4, fields: ["workspaceId", "properties.$**"], unique: false, sparse: false, multikey: true, compactTags: true, wildcard: "properties" },
    { no: 5, fields: ["workspaceId", "groups", "_id"], unique: false, sparse: false, multikey: true, idTail: true, compactTags: true },
  ];
  const wildcard = { kind: "index", index: { no: 4 } };

  it("is chosen for equality, $in and ranges on a property with the workspace bound, in _id order when paging", () => {
    const eq = planQuery({ workspaceId: "w", "properties.plan": "pro" }, undefined, indexes);
    expect(eq).toMatchObject({ ...wildcard, ordered: true, distinct: true });
    expect(eq.ranges).toHaveLength(1);
    // The audience shape: status too, paged in _id order after a cursor.
    const page = planQuery({ workspaceId: "w", status: "SUBSCRIBED", "properties.plan": "pro", _id: { $gt: "c_5" } }, { _id: 1 }, indexes);
    expect(page).toMatchObject({ ...wildcard, ordered: true, reverse: false });
    expect(page.idOrder).toBeUndefined();
    expect(planQuery({ $and: [{ workspaceId: "w" }, { "properties.plan": { $eq: "pro" } }] }, { _id: -1 }, indexes)).toMatchObject({ ...wildcard, ordered: true, reverse: true });
    expect(planQuery({ workspaceId: "w", "properties.plan": { $in: ["pro", "team"] } }, { _id: 1 }, indexes)).toMatchObject({ ...wildcard, ordered: true, idOrder: "merge" });
    expect(planQuery({ workspaceId: "w", "properties.seats": { $gte: 3, $lt: 10 } }, { _id: 1 }, indexes)).toMatchObject({ ...wildcard, ordered: true, idOrder: "collect" });
    expect(planQuery({ workspaceId: "w", "properties.signup": { $lt: new Date() } }, undefined, indexes)).toMatchObject(wildcard);
    expect(planQuery({ workspaceId: "w", "properties.address.city": "Paris" }, undefined, indexes)).toMatchObject(wildcard);
    expect(planQuery({ workspaceId: "w", "properties.plan": "pro" }, { createdAt: -1 }, indexes)).toMatchObject({ ...wildcard, ordered: false });
  });

  it("pages a group's members ({ workspaceId, groups, _id }, several entries per contact) in _id order", () => {
    const plan = planQuery({ workspaceId: "w", groups: "g1", _id: { $gt: "c_5" } }, { _id: 1 }, indexes);
    expect(plan).toMatchObject({ kind: "index", index: { no: 5 }, ordered: true, distinct: true });
    expect(planQuery({ $and: [{ workspaceId: "w" }, { groups: { $eq: "g1" } }] }, { _id: -1 }, indexes)).toMatchObject({ kind: "index", index: { no: 5 }, ordered: true, reverse: true });
    // The audience shape: the group's index, not the status one (as bound, and mostly SUBSCRIBED).
    expect(planQuery({ workspaceId: "w", status: "SUBSCRIBED", $and: [{ groups: { $eq: "g1" } }], _id: { $gt: "c_5" } }, { _id: 1 }, indexes)).toMatchObject({ kind: "index", index: { no: 5 }, ordered: true });
    // Several groups: several ranges, each document once, sorted after collecting.
    expect(planQuery({ workspaceId: "w", groups: { $in: ["g1", "g2"] } }, { _id: 1 }, indexes)).toMatchObject({ kind: "index", index: { no: 5 }, ordered: false });
  });

  it("is not chosen where its entries cannot answer: no workspace, null/missing, array positions, regex, another index's exact match", () => {
    expect(planQuery({ "properties.plan": "pro" }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", "properties.plan": null }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", "properties.plan": { $exists: true } }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", "properties.tags.0": "a" }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", "properties.plan": { $regex: "^pro$", $options: "i" } }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", $or: [{ "properties.plan": "pro" }, { "properties.plan": "team" }] }, undefined, indexes).index?.no).not.toBe(4);
    expect(planQuery({ workspaceId: "w", emailLower: "a@x.io", "properties.plan": "pro" }, undefined, indexes)).toMatchObject({ index: { no: 1 } });
    expect(planQuery({ workspaceId: "w", groups: "g1", "properties.plan": "pro" }, undefined, indexes)).toMatchObject({ kind: "index" });
  });

  it("counts from its entries and pages without reading documents it does not return; persists across reopening", async () => {
    const dir = await tempDir();
    let store = await openLmdbStore({ dir });
    let contacts = store.collection<Row>("contacts");
    await contacts.createIndex({ keys: { workspaceId: 1, status: 1, _id: 1 } });
    await contacts.createIndex({ keys: { workspaceId: 1, "properties.$**": 1 } });
    await expect(contacts.createIndex({ keys: { "properties.$**": 1, workspaceId: 1 } })).rejects.toThrow(/wildcard/);
    await expect(contacts.createIndex({ keys: { "a.$**": 1, "b.$**": 1 } })).rejects.toThrow(/wildcard/);
    await expect(contacts.createIndex({ keys: { workspaceId: 1, "p.$**": 1 }, unique: true })).rejects.toThrow(/wildcard/);
    await contacts.createIndex({ keys: { workspaceId: 1, groups: 1, _id: 1 } });
    const docs: Row[] = Array.from({ length: 500 }, (_, i) => ({
      _id: `c_${String(i).padStart(4, "0")}`,
      workspaceId: i % 2 ? "w1" : "w2",
      groups: i % 3 ? ["g1", "g2"] : ["g2"],
      status: i % 7 ? "SUBSCRIBED" : "UNSUBSCRIBED",
      properties: { plan: i % 10 === 3 ? "pro" : "free", seats: i % 13, tags: i % 4 ? ["a", "b"] : ["a"], "odd.key": "x" },
    }));
    await contacts.insertMany(docs);
    const reads = () => {
      const c = contacts as unknown as { getDoc(id: string): unknown };
      const original = c.getDoc.bind(c);
      const counter = { n: 0 };
      c.getDoc = (id: string) => {
        counter.n++;
        return original(id);
      };
      return counter;
    };
    const expected = (f: (d: Row) => boolean) => docs.filter(f).map((d) => d._id);
    const pros = expected((d) => d.workspaceId === "w1" && d.properties.plan === "pro");
    expect(pros.length).toBe(50);
    let counter = reads();
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.plan": "pro" })).toBe(50);
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.tags": { $in: ["a", "b"] } })).toBe(250);
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.odd.key": "x" })).toBe(0);
    // The audience shape: status too (checked in the { workspaceId, status, _id } index), inside $and.
    const subscribedPros = expected((d) => d.workspaceId === "w1" && d.status === "SUBSCRIBED" && d.properties.plan === "pro");
    expect(subscribedPros.length).toBeGreaterThan(30);
    expect(subscribedPros.length).toBeLessThan(50);
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "SUBSCRIBED", "properties.plan": "pro" })).toBe(subscribedPros.length);
    expect(await contacts.countDocuments({ workspaceId: "w1", $and: [{ status: { $eq: "SUBSCRIBED" } }, { "properties.plan": { $in: ["pro"] } }] })).toBe(subscribedPros.length);
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "UNSUBSCRIBED", "properties.plan": "pro" })).toBe(50 - subscribedPros.length);
    // A group's members are counted from the group index's entries.
    expect(await contacts.countDocuments({ workspaceId: "w1", groups: "g1" })).toBe(expected((d) => d.workspaceId === "w1" && d.groups.includes("g1")).length);
    expect(await contacts.countDocuments({ workspaceId: "w2", $and: [{ groups: { $eq: "g2" } }] })).toBe(250);
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "SUBSCRIBED", $and: [{ groups: { $eq: "g1" } }] })).toBe(
      expected((d) => d.workspaceId === "w1" && d.status === "SUBSCRIBED" && d.groups.includes("g1")).length,
    );
    expect(counter.n).toBe(0);
    const members = await contacts.find({ workspaceId: "w1", groups: "g1", _id: { $gt: "c_0100" } }, { sort: { _id: 1 }, limit: 3 });
    expect(members.map((d) => d._id)).toEqual(["c_0101", "c_0103", "c_0107"]);
    expect(counter.n).toBe(3);
    // Conditions no index holds whole are checked on the documents.
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "SUBSCRIBED", "properties.plan": "pro", "properties.seats": { $lt: 5 } })).toBe(
      expected((d) => d.workspaceId === "w1" && d.status === "SUBSCRIBED" && d.properties.plan === "pro" && d.properties.seats < 5).length,
    );
    expect(await contacts.countDocuments({ workspaceId: "w1", source: "API", "properties.plan": "pro" })).toBe(0);
    expect(counter.n).toBeGreaterThan(0);
    counter.n = 0;
    const page = await contacts.find({ workspaceId: "w1", status: "SUBSCRIBED", "properties.plan": "pro", _id: { $gt: pros[10] } }, { sort: { _id: 1 }, limit: 5 });
    expect(page.map((d) => d._id)).toEqual(pros.filter((id) => id > pros[10] && docs.find((d) => d._id === id)!.status === "SUBSCRIBED").slice(0, 5));
    expect(counter.n).toBeLessThanOrEqual(7);
    await store.close();
    store = await openLmdbStore({ dir });
    contacts = store.collection<Row>("contacts");
    counter = reads();
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.plan": "pro" })).toBe(50);
    expect(counter.n).toBe(0);
    await contacts.updateOne({ _id: pros[0] }, { $set: { "properties.plan": "team" } });
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.plan": "pro" })).toBe(49);
    expect(await contacts.countDocuments({ workspaceId: "w1", "properties.plan": { $in: ["team", "pro"] } })).toBe(50);
    await store.close();
  });
});

describe("LMDB store: covered reads and _id lists without reading documents", () => {
  it("answers an _id projection from keys, counts an _id list by probing the status index, and pages a list from its cursor", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    const totals = store.collection<Row>("totals");
    await totals.createIndex({ keys: { workspaceId: 1, kind: 1, last: 1 } });
    const at = (n: number) => new Date(Date.UTC(2026, 0, 1 + n));
    await totals.insertMany(Array.from({ length: 300 }, (_, i) => ({
      _id: `w1:${i % 2 ? "opened" : "clicked"}:c_${String(i).padStart(4, "0")}`, workspaceId: "w1", kind: i % 2 ? "opened" : "clicked", last: at(i % 30), count: 1 + (i % 4),
    })));
    const contacts = store.collection<Row>("contacts");
    await contacts.createIndex({ keys: { workspaceId: 1, status: 1, _id: 1 } });
    await contacts.insertMany(Array.from({ length: 400 }, (_, i) => ({
      _id: `c_${String(i).padStart(4, "0")}`, workspaceId: i % 5 ? "w1" : "w2", status: i % 7 ? "SUBSCRIBED" : "UNSUBSCRIBED",
    })));
    const reads = { n: 0 };
    for (const c of [totals, contacts] as unknown as { getDoc(id: string): unknown; docs: { get(id: string): unknown; getRange(o: unknown): unknown } }[]) {
      const getDoc = c.getDoc.bind(c), get = c.docs.get.bind(c.docs), getRange = c.docs.getRange.bind(c.docs);
      c.getDoc = (id) => (reads.n++, getDoc(id));
      c.docs.get = (id) => (reads.n++, get(id));
      // (getKeys is getRange without values: only reads with values count)
      c.docs.getRange = (o) => ((o as { values?: boolean }).values === false || reads.n++, getRange(o));
    }
    // A prefix of the _id, paged: keys only.
    const page = await totals.find({ _id: { $gt: "w1:opened:", $lt: "w1:opened:\uffff" } }, { sort: { _id: 1 }, limit: 100, projection: { _id: 1 } });
    expect(page.length).toBe(100);
    expect(page[0]).toEqual({ _id: "w1:opened:c_0001" });
    // The (workspaceId, kind, last) index: its entries hold every field asked for.
    const recent = await totals.find({ workspaceId: "w1", kind: "opened", last: { $gte: at(25) } }, { sort: { last: 1, _id: 1 }, projection: { _id: 1, last: 1 } });
    expect(recent.length).toBe(30);
    expect(recent.every((d) => (d.last as Date).getTime() >= at(25).getTime() && String(d._id).startsWith("w1:opened:"))).toBe(true);
    expect(reads.n).toBe(0);
    // A field the index does not hold: documents are read.
    expect((await totals.find({ workspaceId: "w1", kind: "opened", last: { $gte: at(25) } }, { projection: { _id: 1, count: 1 } })).length).toBe(30);
    expect(reads.n).toBeGreaterThan(0);
    // An audience of resolved ids (frozen, as the filter compiler hands them over): counted by
    // probing { workspaceId, status, _id }, no document read.
    reads.n = 0;
    const ids = Object.freeze(Array.from({ length: 200 }, (_, i) => `c_${String(i * 2).padStart(4, "0")}`));
    const audience = { workspaceId: "w1", status: "SUBSCRIBED", $and: [{ _id: { $in: ids } }] };
    const want = ids.filter((id) => Number(id.slice(2)) % 5 !== 0 && Number(id.slice(2)) % 7 !== 0);
    expect(await contacts.countDocuments(audience)).toBe(want.length);
    expect(await contacts.countDocuments({ $and: [{ _id: { $in: [...ids, "c_9999"] } }] })).toBe(200);
    // A long list: merged with the index's entries in one pass.
    const long = Object.freeze([...Array.from({ length: 400 }, (_, i) => `c_${String(i).padStart(4, "0")}`), ...Array.from({ length: 1_000 }, (_, i) => `c_${5_000 + i}`)]);
    const subscribed = (i: number) => i % 5 !== 0 && i % 7 !== 0;
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "SUBSCRIBED", _id: { $in: long } })).toBe(Array.from({ length: 400 }, (_, i) => i).filter(subscribed).length);
    expect(await contacts.countDocuments({ workspaceId: "w2", status: "SUBSCRIBED", _id: { $in: long } })).toBe(Array.from({ length: 400 }, (_, i) => i).filter((i) => i % 5 === 0 && i % 7 !== 0).length);
    expect(await contacts.countDocuments({ workspaceId: "w1", status: "SUBSCRIBED", _id: { $in: long.slice(350) } })).toBe(Array.from({ length: 50 }, (_, i) => 350 + i).filter(subscribed).length);
    expect(reads.n).toBe(0);
    // A page after a cursor reads from the cursor on, not the ids before it.
    const after = await contacts.find({ ...audience, _id: { $gt: want[100] } }, { sort: { _id: 1 }, limit: 10 });
    expect(after.map((d) => d._id)).toEqual(want.slice(101, 111));
    expect(reads.n).toBeLessThan(40); // about 15 documents (each counted twice: getDoc and get), not the 130 before the cursor
    await store.close();
  });
});

describe("LMDB store: paging a range of property values in _id order", () => {
  it("sees every change between pages and inside write transactions (the collected ids are not reused after a commit)", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    const c = store.collection<Row>("contacts");
    await c.createIndex({ keys: { ws: 1, "properties.$**": 1 } });
    await c.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: `c${String(i).padStart(3, "0")}`, ws: "w", properties: { seats: i % 20 } })));
    const range = { ws: "w", "properties.seats": { $gte: 5, $lt: 10 } };
    const page = async (after: string) => (await c.find({ ...range, _id: { $gt: after } }, { sort: { _id: 1 }, limit: 4 })).map((d) => d._id);
    expect(await page("")).toEqual(["c005", "c006", "c007", "c008"]);
    expect(await page("c008")).toEqual(["c009", "c025", "c026", "c027"]);
    // Changes ahead of the cursor: one joins, one leaves.
    await c.updateOne({ _id: "c030" }, { $set: { "properties.seats": 7 } });
    await c.updateOne({ _id: "c045" }, { $set: { "properties.seats": 1 } });
    expect(await page("c027")).toEqual(["c028", "c029", "c030", "c046"]);
    expect(await page("c046")).toEqual(["c047", "c048", "c049"]);
    expect(await c.countDocuments(range)).toBe(15);
    // The same read inside a write transaction sees the writes queued before it.
    expect(await page("")).toEqual(["c005", "c006", "c007", "c008"]);
    const joins = c.updateOne({ _id: "c001" }, { $set: { "properties.seats": 9 } });
    const claim = c.findOneAndUpdate(range, { $set: { claimed: true } }, { sort: { _id: 1 } });
    await joins;
    expect((await claim)!._id).toBe("c001");
    expect(await page("")).toEqual(["c001", "c005", "c006", "c007"]);
    await store.close();
  });
});

describe("LMDB store: stores written by the first LMDB layout", () => {
  // fixtures/lmdb-v1 was written by the adapter as of 2966cea: documents hold their _id and are
  // not compressed; the {workspaceId, _id} index repeats the _id after its value.
  const expectedContacts = Array.from({ length: 40 }, (_, i) => ({
    _id: `c${String(i).padStart(3, "0")}`,
    workspaceId: i % 2 ? "w1" : "w2",
    email: `u${i}@x.io`,
    subscribed: i % 5 !== 0,
    createdAt: new Date("2026-01-02T03:04:05.678Z"),
    note: `a longer note for contact ${i} so that it would be compressed by the current layout`,
    tags: ["a", `t${i % 3}`],
  }));

  it("opens, reads and keeps working, old and new documents side by side", async () => {
    const dir = await tempDir();
    await cp(fileURLToPath(new URL("./fixtures/lmdb-v1", import.meta.url)), dir, { recursive: true });
    const store = await openLmdbStore({ dir });
    const contacts = store.collection<Row>("contacts");
    expect(await contacts.find({}, { sort: { _id: 1 } })).toEqual(expectedContacts);
    expect(Object.keys((await contacts.findOne({ _id: "c001" }))!)[0]).toBe("_id");
    expect(await store.collection<Row>("settings").findOne({ _id: "s" })).toEqual({ _id: "s", on: true, nested: { list: [1, null, "x"] } });
    // The old {workspaceId, _id} index still serves the stream, and the unique index still holds.
    const stream = async () => (await contacts.find({ workspaceId: "w1", subscribed: true, _id: { $gt: "c010" } }, { sort: { _id: 1 }, limit: 5 })).map((d) => d._id);
    expect(await stream()).toEqual(["c011", "c013", "c017", "c019", "c021"]);
    await expect(contacts.insertOne({ _id: "dup", workspaceId: "w1", email: "u1@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
    // New writes (new layout) mix with old documents and old index entries.
    await contacts.insertOne({ _id: "c012a", workspaceId: "w1", email: "new@x.io", subscribed: true });
    await contacts.updateOne({ _id: "c013" }, { $set: { email: "moved@x.io" } });
    await contacts.updateOne({ _id: "c017" }, { $set: { workspaceId: "w2" } });
    await contacts.deleteOne({ _id: "c019" });
    expect(await stream()).toEqual(["c011", "c012a", "c013", "c021", "c023"]);
    expect((await contacts.findOne({ workspaceId: "w1", email: "moved@x.io" }))!._id).toBe("c013");
    expect(await contacts.findOne({ workspaceId: "w1", email: "u13@x.io" })).toBeNull();
    await contacts.insertOne({ _id: "reuse", workspaceId: "w1", email: "u13@x.io" });
    // An index created now uses the new layout beside the old ones.
    await contacts.createIndex({ keys: { subscribed: 1, _id: 1 } });
    expect((await contacts.find({ subscribed: false, _id: { $lt: "c020" } }, { sort: { _id: -1 } })).map((d) => d._id)).toEqual(["c015", "c010", "c005", "c000"]);
    await store.close();

    const again = await openLmdbStore({ dir });
    expect(await again.collection<Row>("contacts").countDocuments()).toBe(41);
    expect(await again.collection<Row>("contacts").findOne({ _id: "c000" })).toEqual(expectedContacts[0]);
    await again.close();
  });

  it("an index ending in _id finds documents whose _id is longer than the cut-off of other keys", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    const c = store.collection<Row>("long");
    await c.createIndex({ keys: { g: 1, _id: 1 }, unique: true });
    const long = (n: number) => `${"x".repeat(300)}${n}`;
    await c.insertMany([1, 2, 3].map((n) => ({ _id: long(n), g: "a" })));
    expect((await c.findOne({ g: "a", _id: long(2) }))!._id).toBe(long(2));
    expect((await c.find({ g: "a", _id: { $gt: long(1), $lte: long(3) } }, { sort: { _id: 1 } })).map((d) => d._id)).toEqual([long(2), long(3)]);
    expect((await c.find({ g: "a", _id: { $in: [long(3), long(1)] } }, { sort: { _id: -1 } })).map((d) => d._id)).toEqual([long(3), long(1)]);
    await store.close();
  });
});

describe("LMDB store: index keys", () => {
  it("range and equality queries find long strings, in order, beside other types", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    const c = store.collection<Row>("long");
    await c.createIndex({ keys: { s: 1 } });
    const text = (n: number, tail: string) => `${"m".repeat(n)}${tail}`;
    await c.insertMany([
      { _id: "a", s: text(20, "a") },
      { _id: "b", s: text(120, "b") },
      { _id: "c", s: text(250, "c") },
      { _id: "d", s: 5 },
      { _id: "e", s: null },
      { _id: "f", s: true },
      { _id: "g", s: "z" },
    ]);
    const ids = async (filter: Filter, options: FindOptions = {}) => (await c.find(filter, options)).map((d) => d._id);
    expect(await ids({ s: { $gte: "m" } }, { sort: { s: 1 } })).toEqual(["a", "b", "c", "g"]);
    expect(await ids({ s: { $gt: text(100, "") , $lt: "n" } }, { sort: { s: -1 } })).toEqual(["c", "b"]);
    expect(await ids({ s: text(120, "b") })).toEqual(["b"]);
    expect(await ids({ s: text(250, "c") })).toEqual(["c"]);
    expect(await ids({ s: { $lt: 10 } })).toEqual(["d"]);
    await store.close();
  });
});

describe("LMDB store: TTL", () => {
  it("hides expired documents at once and deletes them in the sweep", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    const tokens = store.collection<Row>("tokens");
    await tokens.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 0 });
    await tokens.createIndex({ keys: { key: 1 }, unique: true, sparse: true });
    await tokens.insertMany([
      { _id: "old", key: "k", expiresAt: new Date(Date.now() - 1000) },
      { _id: "live", expiresAt: new Date(Date.now() + 60_000) },
      { _id: "no-date" },
    ]);
    expect((await tokens.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["live", "no-date"]);
    expect(await tokens.countDocuments()).toBe(2);
    // An expired holder does not block its unique key.
    await tokens.insertOne({ _id: "new", key: "k" });
    await store.sweep();
    expect(await tokens.countDocuments()).toBe(3);
    await store.close();
  });
});

describe("LMDB store: a disk that refuses writes", () => {
  it("answers 503 service_unavailable (not a crash or a 500) while the disk is full, and writes again once there is space", async (ctx) => {
    const dir = await tempDir();
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", dir], { stdio: "pipe" });
    } catch {
      ctx.skip(); // needs root to mount a small tmpfs
    }
    try {
      const store = await openLmdbStore({ dir: join(dir, "db") });
      const c = store.collection<Row>("rows");
      for (let i = 0; i < 10; i++) await c.insertOne({ _id: `r${i}`, big: "x".repeat(10_000) });
      const filler = join(dir, "filler");
      await writeFile(filler, Buffer.alloc(8 << 20)).catch(() => undefined); // ENOSPC: the disk is now full
      let refused: unknown;
      for (let i = 0; i < 500 && !refused; i++) await c.insertOne({ _id: `f${i}`, big: "x".repeat(10_000) }).catch((err) => { refused = err; });
      expect(errorInfoOf(refused)).toMatchObject({ code: "service_unavailable", httpStatus: 503 });
      await rm(filler);
      await c.insertOne({ _id: "after", big: "y" });
      expect(await c.findOne({ _id: "after" })).toMatchObject({ big: "y" });
      expect(await c.findOne({ _id: "r9" })).toMatchObject({ _id: "r9" });
      await store.close();
    } finally {
      execFileSync("umount", ["-l", dir]);
    }
  }, 60_000);
});

describe("LMDB counts", () => {
  it("count from index entries alone exactly what reading the documents counts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lmdb-count-"));
    const store = await openLmdbStore({ dir });
    try {
      const rows = store.collection<Doc & { w: string; e?: string; n: number; tags?: string[] }>("rows");
      await rows.createIndex({ keys: { w: 1, n: 1 } });
      await rows.createIndex({ keys: { w: 1, e: 1 }, sparse: true });
      const docs = Array.from({ length: 300 }, (_, i) => ({
        _id: `r${String(i).padStart(4, "0")}`,
        w: `ws_${i % 3}`,
        n: i % 7,
        ...(i % 5 ? { e: `e${i}@x.test` } : {}),
      }));
      await rows.insertMany(docs);
      const expectCount = async (filter: Filter) => {
        const slow = docs.filter((d) => Object.entries(filter).every(([k, v]) => (d as Record<string, unknown>)[k] === v)).length;
        expect(await rows.countDocuments(filter)).toBe(slow);
      };
      await expectCount({ w: "ws_1" }); // a prefix of {w, n}
      await expectCount({ w: "ws_2", n: 3 });
      await expectCount({ n: 4 }); // no index prefix: documents are read
      await rows.deleteMany({ w: "ws_0", n: 0 });
      docs.splice(0, docs.length, ...docs.filter((d) => !(d.w === "ws_0" && d.n === 0)));
      await expectCount({ w: "ws_0" });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("LMDB index definitions", () => {
  it("a writer sees a unique index another process added after the writer's own writes", async () => {
    const dir = await tempDir();
    const store = await openLmdbStore({ dir });
    const people = store.collection<Doc>("people");
    await people.createIndex({ keys: { team: 1 } });
    await people.insertOne({ _id: "a", email: "x@example.com" });
    await people.insertOne({ _id: "b", email: "y@example.com" });
    const fixture = fileURLToPath(new URL("./crash-writer.fixture.ts", import.meta.url));
    execFileSync(process.execPath, ["--import", "tsx", fixture, "index", dir, "people", "email"], { stdio: "inherit" });
    await expect(people.insertOne({ _id: "c", email: "x@example.com" })).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await people.find({ email: "y@example.com" })).toEqual([{ _id: "b", email: "y@example.com" }]);
    await store.close();
  });
});

describe("LMDB store: findIdSegments from the keys", () => {
  it("reads an exact index range or _id range from the keys without a document query, and pages through find otherwise", async () => {
    const store = await openLmdbStore({ dir: await tempDir() });
    try {
      const c = store.collection<Row>("totals");
      await c.createIndex({ keys: { workspaceId: 1, kind: 1, last: 1 } });
      const at = (d: number) => new Date(Date.UTC(2026, 2, d));
      await c.insertMany(Array.from({ length: 40 }, (_, i) => ({ _id: `w:opened:ctc_${String(i).padStart(2, "0")}`, workspaceId: "w", kind: "opened", last: at(1 + (i % 20)) })));
      let finds = 0;
      const find = c.find.bind(c);
      c.find = (filter: Filter, options?: FindOptions) => (finds++, find(filter, options));
      const read = async (filter: Filter, segment: { prefix: string; end?: string }) => {
        const out: string[] = [];
        for await (const batch of c.findIdSegments(filter, segment, { batchSize: 7 })) out.push(...batch);
        return out.sort();
      };
      const expected = Array.from({ length: 40 }, (_, i) => i).filter((i) => 1 + (i % 20) >= 15).map((i) => `ctc_${String(i).padStart(2, "0")}`);
      expect(await read({ workspaceId: "w", kind: "opened", last: { $gte: at(15) } }, { prefix: "w:opened:" })).toEqual(expected);
      expect(await read({ _id: { $gt: "w:opened:", $lt: "w:opened:\uffff" } }, { prefix: "w:opened:ctc_", end: "0" })).toHaveLength(40);
      expect(finds).toBe(0);
      // $gt on the date: the range would hold the bound's own entries, so documents are checked.
      expect(await read({ workspaceId: "w", kind: "opened", last: { $gt: at(19) } }, { prefix: "w:opened:" })).toEqual(["ctc_19", "ctc_39"]);
      expect(finds).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});
