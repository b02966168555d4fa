/**
 * The PostgreSQL adapter against a real server (its database of its own: postgres.fixture.ts):
 * what the store contract cannot show from the port alone — concurrent starts on one schema,
 * races between processes (two pools), how documents sit in jsonb, the plans PostgreSQL picks,
 * timeouts and broken connections. The contract itself runs in store.test.ts.
 */
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@mailroom/kit/config.js";
import { DuplicateKeyError, type Doc } from "./port.js";
import { openPostgresStore, type PostgresCollection, type PostgresStore, type PostgresStoreOptions } from "./postgres.js";
import { adminClient, createTestDatabase } from "./postgres.fixture.js";
import { toPosixRegex } from "./postgres-sql.js";
import { matchesFilter } from "./query.js";

type Row = Doc & Record<string, any>;

const database = await createTestDatabase();
if ("skipReason" in database) console.log(`PostgreSQL adapter tests skipped (${database.skipReason})`);

describe.skipIf("skipReason" in database)("PostgreSQL store adapter", () => {
  const url = "url" in database ? database.url : "";
  const opened: PostgresStore[] = [];
  let admin: pg.Client;
  let seq = 0;

  // Small pools, closed after each test: the server's 100 connections are shared with the rest of the run.
  const open = async (options: Partial<PostgresStoreOptions> = {}) => {
    const store = await openPostgresStore({ url, service: "pgtest", poolSize: 3, ...options });
    opened.push(store);
    return store;
  };
  const fresh = (store: PostgresStore) => store.collection<Row>(`t_${Date.now().toString(36)}_${++seq}`) as PostgresCollection<Row>;

  beforeAll(async () => {
    admin = await adminClient(url);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await admin?.end();
    if ("drop" in database) await database.drop();
  });

  it("creates one schema per unit; any number of processes may open it (and create a table and index) at once", async () => {
    const stores = await Promise.all(Array.from({ length: 4 }, () => open({ service: "racing-start", poolSize: 2 })));
    const name = `together_${Date.now().toString(36)}`;
    await Promise.all(stores.map((s) => s.collection<Row>(name).createIndex({ keys: { email: 1 }, unique: true })));
    await Promise.all(stores.map((s, i) => s.collection<Row>(name).insertOne({ _id: `d${i}`, email: `${i}@x.io` })));
    expect(await stores[0].collection<Row>(name).countDocuments()).toBe(4);
    const { rows } = await admin.query(
      "SELECT count(*)::int AS tables FROM information_schema.tables WHERE table_schema = 'mailroom_racing-start' AND table_name = $1",
      [name],
    );
    expect(rows[0].tables).toBe(1);
    const migrations = await admin.query(`SELECT version FROM "mailroom_racing-start"."$migrations"`);
    expect(migrations.rows).toEqual([{ version: 1 }]);
  });

  it("compare-and-set across processes: of 30 concurrent claims of one document exactly one wins (one statement, and read-modify-write)", async () => {
    const [a, b] = [await open({ poolSize: 5 }), await open({ poolSize: 5 })];
    const name = fresh(a).name;
    await a.collection<Row>(name).insertMany([{ _id: "job", status: "DUE" }, { _id: "job2", status: "DUE", log: [] }]);
    const claims = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      (i % 2 ? a : b).collection<Row>(name).findOneAndUpdate({ _id: "job", status: "DUE" }, { $set: { status: "CLAIMED", by: i } })));
    const winners = claims.filter((c) => c !== null);
    expect(winners).toHaveLength(1);
    expect(await a.collection<Row>(name).findOne({ _id: "job" })).toEqual({ _id: "job", status: "CLAIMED", by: winners[0]!.by });
    // $push is not one of the updates compiled to SQL: the row is read and written under its lock.
    const pushes = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      (i % 2 ? a : b).collection<Row>(name).findOneAndUpdate({ _id: "job2", status: "DUE" }, { $set: { status: "CLAIMED" }, $push: { log: i } })));
    expect(pushes.filter((c) => c !== null)).toHaveLength(1);
    expect((await b.collection<Row>(name).findOne({ _id: "job2" }))!.log).toHaveLength(1);
  });

  it("unique indexes: DuplicateKeyError on insert, update and updateMany; concurrent upserts from two processes make one document", async () => {
    const [a, b] = [await open({ poolSize: 4 }), await open({ poolSize: 4 })];
    const c = fresh(a);
    await c.createIndex({ keys: { ws: 1, email: 1 }, unique: true });
    await c.insertMany([{ _id: "a", ws: "w", email: "a@x.io" }, { _id: "b", ws: "w", email: "b@x.io" }]);
    await expect(c.insertOne({ _id: "c", ws: "w", email: "a@x.io" })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(c.updateOne({ _id: "b" }, { $set: { email: "a@x.io" } })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(c.updateMany({ ws: "w" }, { $set: { email: "same@x.io" } })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(c.updateOne({ _id: "b" }, { $push: { tags: 1 }, $set: { email: "a@x.io" } })).rejects.toBeInstanceOf(DuplicateKeyError);
    // Not sparse: a missing field is a value too (it collides with another missing one, as in MongoDB).
    await c.insertOne({ _id: "n1", ws: "w" });
    await expect(c.insertOne({ _id: "n2", ws: "w" })).rejects.toBeInstanceOf(DuplicateKeyError);

    const settled = await Promise.allSettled(Array.from({ length: 24 }, (_, i) =>
      (i % 2 ? a : b).collection<Row>(c.name).updateOne({ ws: "w", email: "up@x.io" }, { $inc: { n: 1 }, $setOnInsert: { created: true } }, { upsert: true })));
    const failed = settled.filter((s) => s.status === "rejected") as PromiseRejectedResult[];
    for (const f of failed) expect(f.reason).toBeInstanceOf(DuplicateKeyError);
    expect(await c.countDocuments({ email: "up@x.io" })).toBe(1);
    expect(await c.findOne({ email: "up@x.io" }, { projection: { _id: 0 } })).toEqual({ ws: "w", email: "up@x.io", n: 24 - failed.length, created: true });
    expect(failed.length).toBeLessThan(3); // a beaten insert updates the winner's document instead
  });

  it("keeps Dates as Dates (nested, in arrays), stored as {\"$date\": ISO}, compared and sorted as dates", async () => {
    const store = await open();
    const c = fresh(store);
    const day = (d: number) => new Date(Date.UTC(2026, 0, d, 12, 30, 15, 250));
    await c.createIndex({ keys: { ws: 1, at: 1 } });
    await c.insertMany([
      { _id: "a", ws: "w", at: day(3), nested: { when: day(1), list: [day(2), { deep: day(4) }] } },
      { _id: "b", ws: "w", at: day(1) },
      { _id: "c", ws: "w", at: day(10) },
      { _id: "d", ws: "w", at: "2026-01-05T00:00:00.000Z" }, // a string, never a date
      { _id: "e", ws: "w", at: [day(7), day(20)] },
      { _id: "f", ws: "w" },
    ]);
    const a = await c.findOne({ _id: "a" });
    expect(a).toEqual({ _id: "a", ws: "w", at: day(3), nested: { when: day(1), list: [day(2), { deep: day(4) }] } });
    expect(a!.nested.list[1].deep).toBeInstanceOf(Date);
    const raw = await admin.query(`SELECT doc FROM ${c.table} WHERE _id = 'a'`);
    expect(raw.rows[0].doc.at).toEqual({ $date: "2026-01-03T12:30:15.250Z" });

    const ids = async (filter: Record<string, unknown>, sort: Record<string, 1 | -1> = { _id: 1 }) => (await c.find(filter, { sort })).map((d) => d._id);
    expect(await ids({ ws: "w", at: { $gte: day(3), $lt: day(10) } })).toEqual(["a", "e"]);
    expect(await ids({ ws: "w", at: { $gt: day(1) } })).toEqual(["a", "c", "e"]);
    expect(await ids({ ws: "w", at: { $lte: day(1) } })).toEqual(["b"]);
    expect(await ids({ at: day(20) })).toEqual(["e"]);
    expect(await ids({ at: { $in: [day(1), day(10)] } })).toEqual(["b", "c"]);
    expect(await ids({ "nested.list": day(2) })).toEqual(["a"]);
    expect(await ids({ "nested.list.deep": { $lt: day(5) } })).toEqual(["a"]);
    expect(await ids({ at: { $gte: "2026" } })).toEqual(["d"]); // strings compare with strings only
    expect(await ids({ ws: "w", _id: { $in: ["a", "b", "c"] } }, { at: -1 })).toEqual(["c", "a", "b"]);
    await c.updateOne({ _id: "b" }, { $set: { at: day(30) } });
    expect(await ids({ ws: "w", at: { $gt: day(25) } })).toEqual(["b"]);
  });

  it("a filter on indexed fields uses the index on a table of thousands of rows (EXPLAIN), and stays exact with arrays", async () => {
    const store = await open();
    const c = fresh(store);
    await c.createIndex({ keys: { ws: 1, email: 1 } });
    await c.createIndex({ keys: { ws: 1, createdAt: -1 } });
    await c.createIndex({ keys: { ws: 1, "properties.$**": 1 } });
    const docs: Row[] = Array.from({ length: 4000 }, (_, i) => ({
      _id: `c${String(i).padStart(5, "0")}`,
      ws: `w${i % 40}`,
      email: `p${i}@x.io`,
      createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000),
      properties: { plan: i % 3 ? "free" : "pro" },
    }));
    docs.push({ _id: "multi", ws: ["w1", "w2"], email: ["m@x.io", "p3@x.io"], properties: { plan: ["pro"] } });
    await c.insertMany(docs);
    await admin.query(`ANALYZE ${c.table}`);

    const indexed = async (filter: Record<string, unknown>, options = {}) => {
      const plan = await c.explain(filter, options);
      expect(plan, plan).toMatch(/Index (Only )?Scan/);
      expect(plan, plan).not.toMatch(/Seq Scan/);
      return plan;
    };
    await indexed({ ws: "w3", email: "p3@x.io" });
    await indexed({ ws: { $in: ["w3", "w4"] } });
    // A page in index order: the rows without arrays come from the index in order, up to the limit (no sort of the whole workspace).
    const page = await indexed({ ws: "w3", createdAt: { $gte: new Date(Date.UTC(2026, 0, 2)) } }, { sort: { createdAt: -1 }, limit: 10 });
    expect(page, page).toMatch(/->\s+Limit[^\n]*\n\s+->\s+Index Scan using/);
    await indexed({ "properties.plan": "pro", ws: "w7" });
    await indexed({ _id: { $gt: "c01000" } }, { sort: { _id: 1 }, limit: 5 });

    // The answers are still MongoDB's: a document holding arrays on the indexed paths is found through an element.
    expect((await c.find({ ws: "w3", email: "p3@x.io" }, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["c00003"]);
    const newest = await c.find({ ws: "w2", createdAt: { $lt: new Date(Date.UTC(2026, 0, 3)) } }, { sort: { createdAt: -1 }, limit: 3, skip: 1 });
    const all = docs.filter((d) => d.ws === "w2" && d.createdAt < new Date(Date.UTC(2026, 0, 3))).sort((x, y) => y.createdAt - x.createdAt);
    expect(newest.map((d) => d._id)).toEqual(all.slice(1, 4).map((d) => d._id));
    expect((await c.find({ ws: "w2", email: "p3@x.io" }, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["multi"]);
    // findIdSegments pages by _id (keyset), here with no prefix at all.
    const segments: string[] = [];
    for await (const batch of c.findIdSegments({ ws: "w5" }, { prefix: "" }, { batchSize: 7 })) segments.push(...batch);
    expect(segments.sort()).toEqual(docs.filter((d) => d.ws === "w5").map((d) => d._id).sort());
    expect(await c.countDocuments({ ws: "w1", "properties.plan": "pro" })).toBe(docs.filter((d) => d.ws === "w1" && d.properties.plan === "pro").length + 1);
  });

  it("analyzes a table it filled (this server runs with autovacuum off): planned with statistics, a keyset page reads one page", async () => {
    const store = await open();
    const coll = fresh(store);
    await coll.createIndex({ keys: { workspaceId: 1, _id: 1 } });
    const analyzed = async () => (await admin.query(
      "SELECT last_analyze IS NOT NULL AS done FROM pg_stat_user_tables WHERE schemaname = 'mailroom_pgtest' AND relname = $1",
      [coll.name],
    )).rows[0]?.done === true;
    await coll.insertMany(Array.from({ length: 5_000 }, (_, i) => ({ _id: `c${String(i).padStart(6, "0")}`, workspaceId: "ws_a" })));
    await new Promise((r) => setTimeout(r, 300));
    expect(await analyzed()).toBe(false); // too few writes yet
    await coll.insertMany(Array.from({ length: 6_000 }, (_, i) => ({ _id: `d${String(i).padStart(6, "0")}`, workspaceId: "ws_a" })));
    for (let i = 0; i < 50 && !(await analyzed()); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await analyzed()).toBe(true);
  });

  it("answers random filters as the embedded store's matcher (query.ts) does: arrays, nesting, null and missing, mixed types", async () => {
    const store = await open();
    const indexed = fresh(store);
    const plain = fresh(store);
    await indexed.createIndex({ keys: { a: 1 } });
    await indexed.createIndex({ keys: { "a.b": 1, b: -1 } });
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return Math.floor((seed / 2 ** 32) * n);
    };
    const pick = <V>(list: V[]): V => list[rand(list.length)];
    const day = (n: number) => new Date(Date.UTC(2026, 0, n));
    const scalars: unknown[] = [1, 2, 2.5, -1, "1", "x", "y", "X", "", true, false, null, day(1), day(2)];
    const object = (depth: number): Record<string, unknown> => {
      const o: Record<string, unknown> = {};
      for (const k of ["a", "b", "c"]) if (rand(3)) o[k] = value(depth);
      return o;
    };
    // No array directly in an array: there query.ts's ranges look through every level, MongoDB's
    // (and this adapter's) one (the contract checks equality on such arrays).
    const value = (depth: number, inArray = false): unknown => {
      const r = rand(10);
      if (depth > 2 || r < 5) return pick(scalars);
      if (r < 8 && !inArray) return Array.from({ length: rand(4) }, () => value(depth + 1, true));
      return object(depth + 1);
    };
    const docs: Row[] = Array.from({ length: 300 }, (_, i) => ({ ...object(0), _id: `d${String(i).padStart(3, "0")}` }));
    await indexed.insertMany(docs);
    await plain.insertMany(docs);

    const paths = ["a", "b", "a.b", "a.b.c", "a.c", "b.a.c", "c", "c.a"];
    const operand = () => (rand(6) ? pick(scalars) : pick<unknown>([{ b: 1 }, [1, 2], [], { a: "x", b: true }]));
    const condition = (): unknown => {
      switch (rand(11)) {
        case 0: return operand();
        case 1: return { $eq: operand() };
        case 2: return { $ne: operand() };
        case 3: return { $in: [operand(), operand(), pick(scalars)] };
        case 4: return { $nin: [operand(), pick(scalars)] };
        case 5: return { [pick(["$gt", "$gte", "$lt", "$lte"])]: pick(scalars) };
        case 6: return { $gte: pick([1, "x", day(1)]), $lt: pick([2.5, "y", day(2)]) };
        case 7: return { $exists: rand(2) === 0 };
        case 8: return { $regex: pick(["^x", "1", "^$"]), $options: pick(["", "i"]) };
        case 9: return null;
        default: return { $ne: null };
      }
    };
    const leaf = () => ({ [pick(paths)]: condition() });
    const filter = (): Record<string, unknown> => {
      switch (rand(6)) {
        case 0: return { $or: [leaf(), leaf()] };
        case 1: return { $nor: [leaf()] };
        case 2: return { ...leaf(), ...leaf() };
        case 3: return { $and: [leaf(), { $or: [leaf(), leaf()] }] };
        default: return leaf();
      }
    };
    const mismatches: unknown[] = [];
    for (let i = 0; i < 400; i++) {
      const f = filter();
      const expected = docs.filter((d) => matchesFilter(d, f)).map((d) => d._id);
      for (const c of [indexed, plain]) {
        const got = (await c.find(f, { sort: { _id: 1 } })).map((d) => d._id);
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          const differing = docs.filter((d) => expected.includes(d._id) !== got.includes(d._id));
          mismatches.push({ filter: f, collection: c === indexed ? "indexed" : "plain", expected: differing.filter((d) => expected.includes(d._id)), unexpected: differing.filter((d) => got.includes(d._id)) });
        }
      }
    }
    expect(mismatches.slice(0, 5)).toEqual([]);
  });

  it("the statement timeout ends a statement that waits too long (here on a row lock) with an error", async () => {
    const store = await open({ statementTimeoutMs: 300, poolSize: 2 });
    const c = fresh(store);
    await c.insertOne({ _id: "locked", n: 1 });
    await admin.query("BEGIN");
    try {
      await admin.query(`SELECT * FROM ${c.table} WHERE _id = 'locked' FOR UPDATE`);
      const started = Date.now();
      await expect(c.updateOne({ _id: "locked" }, { $inc: { n: 1 } })).rejects.toThrow(/statement timeout/);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await admin.query("ROLLBACK");
    }
    await c.updateOne({ _id: "locked" }, { $inc: { n: 1 } });
    expect((await c.findOne({ _id: "locked" }))!.n).toBe(2);
  });

  it("survives a backend killed with pg_terminate_backend: the next read runs on a new connection", async () => {
    // The pool reports the idle connections the server ended: kept here, out of the test output.
    const warnings: string[] = [];
    const store = await open({ service: "killed", poolSize: 3, logger: { warn: (m) => warnings.push(m) } });
    const c = fresh(store);
    await c.insertOne({ _id: "a", v: 1 });
    await Promise.all([c.findOne({ _id: "a" }), c.findOne({ _id: "a" }), c.countDocuments()]); // three pooled connections
    const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mailroom-killed' AND pid <> pg_backend_pid()");
    expect(killed.rowCount).toBeGreaterThan(0);
    expect(await c.findOne({ _id: "a" })).toEqual({ _id: "a", v: 1 });
    expect(await c.countDocuments()).toBe(1);
  });

  it("deletes documents past their TTL with a periodic DELETE", async () => {
    const store = await open({ ttlIntervalMs: 50 });
    const c = fresh(store);
    await c.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 0 });
    await c.insertMany([
      { _id: "old", expiresAt: new Date(Date.now() - 1000) },
      { _id: "live", expiresAt: new Date(Date.now() + 60_000) },
      { _id: "string", expiresAt: "2000-01-01T00:00:00.000Z" },
      { _id: "none" },
    ]);
    for (let waited = 0; waited < 3000 && (await c.countDocuments({ _id: "old" })) > 0; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["live", "none", "string"]);
  });

  it("keeps values out of the SQL: quotes and SQL in values and field names are data", async () => {
    const store = await open();
    const c = fresh(store);
    const evil = `'); DROP TABLE ${c.table}; --`;
    await c.createIndex({ keys: { "we'ird.key": 1 } });
    await c.insertOne({ _id: evil, "we'ird": { key: evil }, "a\"b": `"\\` });
    expect(await c.findOne({ "we'ird.key": evil })).toEqual({ _id: evil, "we'ird": { key: evil }, "a\"b": `"\\` });
    expect(await c.countDocuments({ "a\"b": { $regex: '^"\\\\$' } })).toBe(1);
    expect(await c.countDocuments({ _id: { $in: [evil] } })).toBe(1);
  });

  it("translates regular expressions to PostgreSQL's, refusing what would not mean the same", async () => {
    const store = await open();
    const c = fresh(store);
    await c.insertMany([{ _id: "a", s: "Hello World" }, { _id: "b", s: "helloworld" }, { _id: "c", s: ["x", "say hello"] }, { _id: "d", s: "line1\nhello" }]);
    const ids = async (filter: Record<string, unknown>) => (await c.find(filter, { sort: { _id: 1 } })).map((d) => d._id);
    expect(await ids({ s: /\bhello\b/i })).toEqual(["a", "c", "d"]);
    expect(await ids({ s: { $regex: "^hello", $options: "i" } })).toEqual(["a", "b"]);
    expect(await ids({ s: { $regex: "^hello", $options: "m" } })).toEqual(["b", "d"]);
    expect(await ids({ s: { $regex: "^hello" } })).toEqual(["b"]);
    expect(await ids({ s: /\x48ello/ })).toEqual(["a"]);
    expect(await ids({ _id: /^[ab]$/ })).toEqual(["a", "b"]);
    expect(toPosixRegex("\\bword\\B\\d+[\\w-]")).toBe("\\yword\\Y\\d+[\\w-]");
    await expect(c.find({ s: /(?<name>x)/ })).rejects.toThrow(/unsupported in \$regex/);
    await expect(c.find({ s: /\p{L}/u })).rejects.toThrow(/unsupported in \$regex/);
  });

  it("prepares lookups and compare-and-sets by _id and inserts, once per connection; a statement shaped by a search is not", async () => {
    // One connection: pg_prepared_statements shows that session's statements.
    const store = await open({ poolSize: 1 });
    const c = fresh(store);
    await c.insertOne({ _id: "a", n: 1, status: "DUE" });
    await c.insertMany([{ _id: "b", n: 2 }, { _id: "c", n: 3 }]);
    for (let i = 0; i < 7; i++) expect(await c.findOne({ _id: i % 2 ? "a" : "b" })).toMatchObject({ n: i % 2 ? 1 : 2 });
    expect(await c.findOneAndUpdate({ _id: "a", status: "DUE" }, { $set: { status: "CLAIMED" } })).toMatchObject({ status: "CLAIMED" });
    expect(await c.findOneAndUpdate({ _id: "b", status: "DUE" }, { $set: { status: "CLAIMED" } })).toBeNull();
    expect(await c.find({ n: { $gt: 1 } })).toHaveLength(2);
    await c.insertOne({ _id: "d", n: 4 });
    const { rows } = await store.pool.query(
      "SELECT statement, generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE NOT from_sql ORDER BY prepare_time",
    );
    const runs = (pattern: RegExp) => rows.filter((r) => pattern.test(r.statement)).map((r) => Number(r.runs));
    expect(rows.every((r) => r.statement.includes(c.table))).toBe(true);
    expect(runs(/^INSERT .* VALUES \(\$1, \$2::jsonb\)$/)).toEqual([2]);
    expect(runs(/^INSERT .* unnest\(/)).toEqual([1]);
    expect(runs(/^SELECT _id, doc AS doc FROM \S+ WHERE _id = \$1 +LIMIT \$2$/)).toEqual([7]);
    expect(runs(/^WITH target AS \(SELECT _id, doc FROM \S+ WHERE \(_id = \$1 AND /)).toEqual([2]);
    // The range search is planned for its values each time.
    expect(rows).toHaveLength(4);
  });

  it("an update SQL cannot express is a write conditional on the row's version: 100 racing counts on one document, none lost", async () => {
    const [a, b] = [await open({ poolSize: 4 }), await open({ poolSize: 4 })];
    const name = fresh(a).name;
    // Dotted $inc with an upsert, as the daily stats documents are kept.
    await Promise.all(Array.from({ length: 100 }, (_, i) =>
      (i % 2 ? a : b).collection<Row>(name).updateOne({ _id: "day" }, { $inc: { "c.sent": 1, [`c.by${i % 3}`]: 1 }, $setOnInsert: { day: "d" } }, { upsert: true })));
    expect(await a.collection<Row>(name).findOne({ _id: "day" })).toEqual({ _id: "day", day: "d", c: { sent: 100, by0: 34, by1: 33, by2: 33 } });
    // Matched on the version it read: a row changed in between is read again, its filter checked again.
    const c = a.collection<Row>(name);
    await c.insertOne({ _id: "job", status: "DUE", log: [] });
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => c.findOneAndUpdate({ status: "DUE" }, { $set: { status: "CLAIMED" }, $push: { log: i } })));
    expect(claims.filter((x) => x !== null)).toHaveLength(1);
    expect((await c.findOne({ _id: "job" }))!.log).toHaveLength(1);
  });

  it("bulkWrite commits its operations together (one transaction per 500), and after a failure keeps those before it", async () => {
    const store = await open();
    const c = fresh(store);
    await c.createIndex({ keys: { email: 1 }, unique: true });
    await c.insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: `d${String(i).padStart(3, "0")}`, email: `${i}@x.io`, n: 0 })));
    const ops = Array.from({ length: 600 }, (_, i) => ({ updateOne: { filter: { _id: `d${String(i).padStart(3, "0")}` }, update: { $inc: { n: 1 } } } }));
    const upsert = { updateOne: { filter: { email: "new@x.io" }, update: { $set: { n: 1 } }, upsert: true } };
    const inserts = [{ insertOne: { document: { _id: "i1", email: "i1@x.io" } } }, { insertOne: { document: { _id: "i2", email: "i2@x.io" } } }];
    const result = await c.bulkWrite([...ops.slice(0, 300), upsert, ...inserts, ...ops.slice(300)]);
    expect(result).toMatchObject({ matchedCount: 600, modifiedCount: 600, upsertedCount: 1, insertedCount: 2 });
    expect(Object.keys(result.upsertedIds)).toEqual(["300"]);
    // Rows written by one transaction share its id (xmin): 603 writes, 2 transactions.
    const { rows } = await admin.query(`SELECT count(DISTINCT xmin::text)::int AS transactions FROM ${c.table}`);
    expect(rows[0].transactions).toBe(2);
    expect(await c.countDocuments({ n: 1 })).toBe(601);
    // A duplicate in the middle: the operations before it stay, it throws, the rest do not run.
    await expect(c.bulkWrite([
      { updateOne: { filter: { _id: "d000" }, update: { $set: { tag: 1 } } } },
      { updateOne: { filter: { _id: "d001" }, update: { $set: { tag: 1 } } } },
      { updateOne: { filter: { _id: "d002" }, update: { $set: { email: "0@x.io" } } } },
      { updateOne: { filter: { _id: "d003" }, update: { $set: { tag: 1 } } } },
    ])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect((await c.find({ tag: 1 }, { sort: { _id: 1 } })).map((d) => d._id)).toEqual(["d000", "d001"]);
  });

  it("refuses use after close", async () => {
    const store = await openPostgresStore({ url, service: "pgtest" });
    const c = store.collection<Row>("after_close");
    await c.insertOne({ _id: "x" });
    await store.close();
    await store.close(); // idempotent
    await expect(c.find({})).rejects.toThrow(/closed/);
    expect(() => store.collection("other")).toThrow(/closed/);
  });
});

describe("configuration", () => {
  it("takes MAILROOM_POSTGRES_URL and MAILROOM_POSTGRES_POOL, and refuses them beside MAILROOM_MONGODB_URL, naming both", () => {
    const c = loadConfig({ MAILROOM_POSTGRES_URL: "postgres://db:5432/mailroom", MAILROOM_POSTGRES_POOL: "4" });
    expect(c).toMatchObject({ postgresUrl: "postgres://db:5432/mailroom", postgresPool: 4, mongodbUrl: undefined });
    const both = () => loadConfig({ MAILROOM_POSTGRES_URL: "postgres://db/m", MAILROOM_MONGODB_URL: "mongodb://db/m" });
    expect(both).toThrow(/MAILROOM_POSTGRES_URL: .*\n\s+MAILROOM_MONGODB_URL: /);
    expect(() => loadConfig({ MAILROOM_POSTGRES_POOL: "0" })).toThrow(/MAILROOM_POSTGRES_POOL/);
  });
});
