import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmbeddedStore } from "./nedb-legacy.js";
import { openLmdbStore } from "./lmdb.js";
import { openMongoStore } from "./mongo.js";
import { openMemoryStore, openStore } from "./open.js";
import { openPostgresStore } from "./postgres.js";
import { adminClient, createTestDatabase } from "./postgres.fixture.js";
import { DuplicateKeyError, type Doc } from "./port.js";
import { describeStoreContract } from "../../../test/store-contract/contract.js";

const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mailroom-store-"));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describeStoreContract("embedded (lmdb)", async () => openLmdbStore({ dir: await tempDir() }));
describeStoreContract("nedb (files, legacy)", async () => createEmbeddedStore({ dir: await tempDir() }));
describeStoreContract("embedded (memory)", async () => openMemoryStore());

// ---------------------------------------------------------------------------------------------
// MongoDB: a given server, else a throwaway container, else skipped (said plainly).

type MongoTarget = { url: string } | { startContainer: true } | { skipReason: string };

async function findMongo(): Promise<MongoTarget> {
  const url = process.env.MAILROOM_TEST_MONGODB_URL;
  if (url) return { url };
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return { startContainer: true };
  } catch {
    return { skipReason: "no MAILROOM_TEST_MONGODB_URL and no container runtime" };
  }
}

const mongo = await findMongo();
if ("skipReason" in mongo) console.log(`store contract: MongoDB adapter skipped (${mongo.skipReason})`);

let mongoUrl = "url" in mongo ? mongo.url : "";
let stopContainer: (() => Promise<unknown>) | undefined;
const mongoDbName = `mailroom_contract_${Date.now().toString(36)}`;

describe.skipIf("skipReason" in mongo)("MongoDB server", () => {
  beforeAll(async () => {
    if (!("startContainer" in mongo)) return;
    const { MongoDBContainer } = await import("@testcontainers/mongodb");
    const container = await new MongoDBContainer("mongo:7").start();
    // The container runs a one-node replica set announced under its internal hostname.
    mongoUrl = `${container.getConnectionString()}/?directConnection=true`;
    stopContainer = () => container.stop();
  }, 180_000);

  describeStoreContract("mongodb", () => openMongoStore({ url: mongoUrl, service: "contract", dbName: mongoDbName }), {
    cleanup: async () => {
      const client = new MongoClient(mongoUrl);
      try {
        await client.db(mongoDbName).dropDatabase();
      } finally {
        await client.close();
        await stopContainer?.();
      }
    },
  });

  it("openStore picks MongoDB when a URL is given", async () => {
    const store = await openStore({ dataDir: await tempDir(), mongodbUrl: mongoUrl, service: "contract" });
    try {
      expect(store.kind).toBe("mongodb");
    } finally {
      await store.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a database of this run's own on the server every machine here runs (CI's too);
// skipped only when that server is unreachable outside CI (postgres.fixture.ts).

const postgres = await createTestDatabase();
if ("skipReason" in postgres) console.log(`store contract: PostgreSQL adapter skipped (${postgres.skipReason})`);

describe.skipIf("skipReason" in postgres)("PostgreSQL server", () => {
  const url = "url" in postgres ? postgres.url : "";
  afterAll(async () => {
    if ("drop" in postgres) await postgres.drop();
  });
  describeStoreContract("postgres", () => openPostgresStore({ url, service: "contract", poolSize: 5 }));

  it("openStore picks PostgreSQL when a URL is given (schema mailroom_<service>)", async () => {
    const store = await openStore({ dataDir: await tempDir(), postgresUrl: url, postgresPool: 2, service: "open-check" });
    try {
      expect(store.kind).toBe("postgres");
      await store.collection<Row>("things").insertOne({ _id: "a", at: new Date(5) });
      expect(await store.collection<Row>("things").findOne({ _id: "a" })).toEqual({ _id: "a", at: new Date(5) });
    } finally {
      await store.close();
    }
    const admin = await adminClient(url);
    try {
      const { rows } = await admin.query(`SELECT to_regclass('"mailroom_open-check".things') IS NOT NULL AS present`);
      expect(rows[0].present).toBe(true);
    } finally {
      await admin.end();
    }
    await expect(openStore({ dataDir: await tempDir(), postgresUrl: url, mongodbUrl: "mongodb://127.0.0.1", service: "x" })).rejects.toThrow(/PostgreSQL and a MongoDB/);
  });
});

// ---------------------------------------------------------------------------------------------
// Embedded-only behaviour: files, persistence, TTL expiry, compaction, lifecycle.

type Row = Doc & Record<string, any>;

describe("embedded store", () => {
  it("openStore keeps one LMDB environment under <dataDir>/<service>/", async () => {
    const dataDir = await tempDir();
    const store = await openStore({ dataDir, service: "email" });
    expect(store.kind).toBe("embedded");
    await store.collection<Row>("emails").insertOne({ _id: "e1" });
    await store.collection<Row>("events").insertOne({ _id: "v1" });
    await store.close();
    expect((await readdir(join(dataDir, "email"))).sort()).toEqual(["store.mdb", "store.mdb-lock"]);
  });

  it("survives a reopen from disk: documents, Dates, updates, deletes and unique indexes", async () => {
    const dataDir = await tempDir();
    const first = await openStore({ dataDir, service: "directory" });
    const contacts = first.collection<Row>("contacts");
    await contacts.createIndex({ keys: { email: 1 }, unique: true });
    const at = new Date("2024-02-03T04:05:06.789Z");
    await contacts.insertMany([
      { _id: "c1", email: "a@x.io", createdAt: at, tags: ["vip"] },
      { _id: "c2", email: "b@x.io", createdAt: at },
      { _id: "c3", email: "c@x.io", createdAt: at },
    ]);
    await contacts.updateOne({ _id: "c1" }, { $set: { "profile.name": "Ann" }, $push: { tags: "new" }, $inc: { opens: 2 } });
    await contacts.deleteOne({ _id: "c3" });
    await first.close();

    const second = await openStore({ dataDir, service: "directory" });
    const reopened = second.collection<Row>("contacts");
    const docs = await reopened.find({}, { sort: { _id: 1 } });
    expect(docs).toEqual([
      { _id: "c1", email: "a@x.io", createdAt: at, tags: ["vip", "new"], profile: { name: "Ann" }, opens: 2 },
      { _id: "c2", email: "b@x.io", createdAt: at },
    ]);
    expect(docs[0].createdAt).toBeInstanceOf(Date);
    await reopened.createIndex({ keys: { email: 1 }, unique: true });
    await expect(reopened.insertOne({ _id: "c9", email: "b@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
    await second.close();
  });

  it("expires documents past their TTL", async () => {
    const store = openMemoryStore();
    const tokens = store.collection<Row>("tokens");
    await tokens.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 0 });
    await tokens.insertMany([
      { _id: "old", expiresAt: new Date(Date.now() - 1000) },
      { _id: "live", expiresAt: new Date(Date.now() + 60_000) },
      { _id: "no-date" },
    ]);
    expect((await tokens.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["live", "no-date"]);
    expect(await tokens.countDocuments()).toBe(2);
    await store.close();
  });

  it("compacts datafiles periodically", async () => {
    const dir = await tempDir();
    const store = createEmbeddedStore({ dir, compactionIntervalMs: 25 });
    const counters = store.collection<Row>("counters");
    await counters.insertOne({ _id: "c", n: 0 });
    for (let i = 0; i < 20; i++) await counters.updateOne({ _id: "c" }, { $inc: { n: 1 } });
    const lines = async () => (await readFile(join(dir, "counters.db"), "utf8")).split("\n").filter(Boolean).length;
    let count = await lines();
    for (let waited = 0; count > 1 && waited < 2000; waited += 25) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      count = await lines();
    }
    expect(count).toBe(1);
    expect((await counters.findOne({ _id: "c" }))!.n).toBe(20);
    await store.close();
  });

  it("memory stores are isolated from each other", async () => {
    const a = openMemoryStore();
    const b = openMemoryStore();
    await a.collection<Row>("x").insertOne({ _id: "1" });
    expect(await b.collection<Row>("x").countDocuments()).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it("refuses bad collection or service names and use after close", async () => {
    const store = openMemoryStore();
    expect(() => store.collection("../escape")).toThrow(/collection name/);
    expect(() => store.collection("")).toThrow(/collection name/);
    await expect(openStore({ dataDir: await tempDir(), service: "../x" })).rejects.toThrow(/service name/);
    const things = store.collection<Row>("things");
    await store.close();
    await store.close(); // idempotent
    await expect(things.insertOne({ _id: "late" })).rejects.toThrow(/closed/);
    await expect(things.find({})).rejects.toThrow(/closed/);
    expect(() => store.collection("other")).toThrow(/closed/);
  });

  it("rejects filter and update operators outside the port's subset", async () => {
    const store = openMemoryStore();
    const c = store.collection<Row>("c");
    await c.insertOne({ _id: "a", n: 1 });
    await expect(c.find({ n: { $mod: [2, 1] } })).rejects.toThrow(/unsupported query operator/);
    await expect(c.find({ $where: "true" })).rejects.toThrow(/unsupported query operator/);
    await expect(c.updateOne({ _id: "a" }, { $rename: { n: "m" } } as never)).rejects.toThrow(/unsupported update operator/);
    await store.close();
  });
});
