/**
 * Store benchmark: a contact audience on the single-machine store engines, each in its own
 * child process (so max RSS is per engine), in the same run:
 *
 *  - lmdb:   the embedded store (services/kit/src/store/lmdb.ts) through the store port.
 *  - sqlite: SQLite (node-sqlite3-wasm, WebAssembly) used directly — a table with the indexed
 *            fields as columns and the document as JSON, 64 MB page cache, synchronous=FULL
 *            (this build cannot use WAL: rollback journal) — measured as the engine candidate it
 *            was (no port layer on top, so its figures are an upper bound for an adapter).
 *  - nedb:   the previous embedded adapter (services/kit/src/store/nedb-legacy.ts) through the
 *            port, at the largest size it reasonably holds (all documents in memory).
 *  - postgres: the PostgreSQL adapter (services/store/src/postgres.ts) through the port, in a
 *            database made for the run on the server at MAILROOM_TEST_POSTGRES_URL (default
 *            postgres://127.0.0.1:5432/test) and dropped at the end; schema `mailroom_bench`,
 *            a pool of BENCH_POSTGRES_POOL (default 10) connections. BENCH_STORE=postgres runs
 *            it beside lmdb (engines lmdb,postgres unless BENCH_STORE_ENGINES says otherwise)
 *            and prints its figures as a share of lmdb's from the same run, with the CPU the
 *            server's backends of that database spent per phase (bench/postgres.ts: read from
 *            /proc at the phase's ends; the pool's connections live through the phases) and
 *            the bench process's own CPU (where lmdb spends all of its).
 *
 * Figures per engine: bulk import (insertMany batches of 1,000 = one transaction each),
 * streaming the subscribed audience in pages of 1,000 the way the audience unit does
 * (find({workspaceId, subscribed: true, _id: {$gt: cursor}}, {sort: {_id: 1}, limit: 1000})),
 * point lookups by {workspaceId, email} (unique index), and the time to open the populated
 * store in a fresh process and answer the first lookup. Max RSS is the larger of the
 * populate and open processes; a third line shows RSS at the end of each phase, split into
 * anonymous memory and file-backed pages (the mapped LMDB file), and the size of the
 * contacts' document and index databases.
 *
 * Env: BENCH_STORE_CONTACTS (1,000,000), BENCH_STORE_NEDB_CONTACTS (200,000, at most the
 * former), BENCH_STORE_ENGINES (lmdb,sqlite,nedb), BENCH_STORE_BATCH (1,000 contacts per
 * insertMany), BENCH_STORE_IN_FLIGHT (1: each batch awaited before the next is sent). Targets for the default store: < 512 MB
 * RSS at 1,000,000 contacts, open < 1 s, stream >= 100,000/s, import >= 20,000/s.
 *
 * Run: `npm run bench store` or `npx tsx bench/store.ts`.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { monotonicFactory } from "ulidx";
import { openLmdbStore } from "@mailroom/store/lmdb.js";
import { createEmbeddedStore } from "@mailroom/store/nedb-legacy.js";
import type { Collection, Doc, Store } from "@mailroom/store/port.js";
import { adminClient } from "@mailroom/store/postgres.fixture.js";
import { benchStore, createBenchDatabase, postgresCpuMeter } from "./postgres.js";

const WORKSPACE = "ws_bench";
const BATCH = Number(process.env.BENCH_STORE_BATCH ?? 1000);
const IMPORT_IN_FLIGHT = Number(process.env.BENCH_STORE_IN_FLIGHT ?? 1);
const PAGE = 1000;
const LOOKUPS = 50_000;
const LOOKUP_SECONDS = 5;
const SINGLE_LANES = 64;
const SINGLE_INSERTS = 20_000;
const SINGLE_SECONDS = 5;

type Engine = "lmdb" | "sqlite" | "nedb" | "postgres";

interface Contact extends Doc {
  workspaceId: string;
  email: string;
  emailLower: string;
  firstName: string;
  lastName: string;
  timezone: string;
  subscribed: boolean;
  status: string;
  properties: { plan: string; seats: number; company: string };
  createdAt: Date;
  updatedAt: Date;
}

const PLANS = ["free", "starter", "pro", "enterprise"];
const ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC"];
const emailOf = (i: number) => `user${i}.${(i * 7919) % 100_003}@example${i % 97}.com`;

function contact(i: number, id: string, at: Date): Contact {
  const email = emailOf(i);
  const subscribed = i % 10 !== 0;
  return {
    _id: id,
    workspaceId: WORKSPACE,
    email,
    emailLower: email,
    firstName: `First${i % 5000}`,
    lastName: `Last${i % 7000}`,
    timezone: ZONES[i % ZONES.length],
    subscribed,
    status: subscribed ? "subscribed" : "unsubscribed",
    properties: { plan: PLANS[i % PLANS.length], seats: i % 50, company: `Company ${i % 20_000}` },
    createdAt: at,
    updatedAt: at,
  };
}

// ---------------------------------------------------------------------------------------------
// The engines, behind the few operations the benchmark needs.

interface Bench {
  importBatch(docs: Contact[]): Promise<void>;
  /** One document, its own write (the transactional send path: many of these at once). */
  insertOne(doc: Doc & Record<string, unknown>): Promise<void>;
  page(cursor: string | undefined): Promise<Contact[]>;
  lookup(email: string): Promise<Contact | null>;
  close(): Promise<void>;
  /** After the import, before the timed reads (postgres: ANALYZE when autovacuum is off); what it did. */
  afterImport?(): Promise<string | undefined>;
  /** Pages per database in MB (lmdb), table and index sizes (postgres). */
  databases?(): string | Promise<string>;
}

function portBench(store: Store): Bench & { init(): Promise<void> } {
  const contacts: Collection<Contact> = store.collection<Contact>("contacts");
  return {
    async init() {
      await contacts.createIndex({ keys: { workspaceId: 1, emailLower: 1 }, unique: true });
      await contacts.createIndex({ keys: { workspaceId: 1, _id: 1 } });
    },
    importBatch: (docs) => contacts.insertMany(docs),
    insertOne: (doc) => store.collection<Doc>("emails").insertOne(doc),
    page: (cursor) =>
      contacts.find(cursor ? { workspaceId: WORKSPACE, subscribed: true, _id: { $gt: cursor } } : { workspaceId: WORKSPACE, subscribed: true }, {
        sort: { _id: 1 },
        limit: PAGE,
      }),
    lookup: (email) => contacts.findOne({ workspaceId: WORKSPACE, emailLower: email }),
    close: () => store.close(),
  };
}

async function sqliteBench(dir: string): Promise<Bench> {
  // CommonJS package: its exports arrive as the default export under tsx.
  const sqlite = (await import("node-sqlite3-wasm")) as unknown as { Database?: unknown; default?: { Database: unknown } };
  const Database = (sqlite.Database ?? sqlite.default!.Database) as typeof import("node-sqlite3-wasm").Database;
  const db = new Database(path.join(dir, "store.sqlite"));
  const mode = db.get("PRAGMA journal_mode=WAL") as { journal_mode?: string } | null;
  if (mode?.journal_mode !== "wal") db.exec("PRAGMA journal_mode=DELETE");
  db.exec("PRAGMA synchronous=FULL");
  db.exec("PRAGMA cache_size=-65536"); // 64 MB page cache (the default 2 MB starves lookups at 1M rows)
  db.exec(`CREATE TABLE IF NOT EXISTS contacts (
    id TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, emailLower TEXT NOT NULL, subscribed INTEGER NOT NULL, doc TEXT NOT NULL
  ) WITHOUT ROWID`);
  db.exec("CREATE UNIQUE INDEX IF NOT EXISTS contacts_ws_email ON contacts (workspaceId, emailLower)");
  db.exec("CREATE INDEX IF NOT EXISTS contacts_ws_id ON contacts (workspaceId, id)");
  const insert = db.prepare("INSERT INTO contacts (id, workspaceId, emailLower, subscribed, doc) VALUES (?, ?, ?, ?, ?)");
  const first = db.prepare("SELECT doc FROM contacts WHERE workspaceId = ? AND subscribed = 1 ORDER BY id LIMIT ?");
  const next = db.prepare("SELECT doc FROM contacts WHERE workspaceId = ? AND subscribed = 1 AND id > ? ORDER BY id LIMIT ?");
  const byEmail = db.prepare("SELECT doc FROM contacts WHERE workspaceId = ? AND emailLower = ?");
  db.exec("CREATE TABLE IF NOT EXISTS emails (id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID");
  const insertEmail = db.prepare("INSERT INTO emails (id, doc) VALUES (?, ?)");
  const revive = (row: unknown): Contact => {
    const doc = JSON.parse((row as { doc: string }).doc) as Contact;
    doc.createdAt = new Date(doc.createdAt);
    doc.updatedAt = new Date(doc.updatedAt);
    return doc;
  };
  return {
    async importBatch(docs) {
      db.exec("BEGIN");
      try {
        for (const d of docs) insert.run([d._id, d.workspaceId, d.emailLower, d.subscribed ? 1 : 0, JSON.stringify(d)]);
        db.exec("COMMIT");
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
    },
    async insertOne(doc) {
      insertEmail.run([doc._id, JSON.stringify(doc)]); // autocommit: one transaction per insert
    },
    async page(cursor) {
      const rows = cursor ? next.all([WORKSPACE, cursor, PAGE]) : first.all([WORKSPACE, PAGE]);
      return rows.map(revive);
    },
    async lookup(email) {
      const row = byEmail.get([WORKSPACE, email]);
      return row ? revive(row) : null;
    },
    async close() {
      for (const s of [insert, first, next, byEmail, insertEmail]) s.finalize();
      db.close();
    },
  };
}

/** The PostgreSQL engine's schema (openPostgresStore's `mailroom_<service>`). */
const PG_SERVICE = "bench";
const PG_SCHEMA = `mailroom_${PG_SERVICE}`;

async function openEngine(engine: Engine, dir: string): Promise<Bench> {
  if (engine === "sqlite") return sqliteBench(dir);
  if (engine === "postgres") {
    // `dir` is the run's database URL for this engine.
    const { openPostgresStore } = await import("@mailroom/store/postgres.js");
    const pool = process.env.BENCH_POSTGRES_POOL ? Number(process.env.BENCH_POSTGRES_POOL) : undefined;
    const store = await openPostgresStore({ url: dir, service: PG_SERVICE, poolSize: pool });
    const bench = portBench(store);
    await bench.init();
    const databases = async () => {
      const { rows } = await store.pool.query(
        `SELECT pg_relation_size($1::regclass) AS docs, pg_indexes_size($1::regclass) AS idx, pg_total_relation_size($1::regclass) - pg_relation_size($1::regclass) - pg_indexes_size($1::regclass) AS toast`,
        [`${PG_SCHEMA}.contacts`],
      );
      const mb = (v: unknown) => Math.round(Number(v) / 1024 / 1024);
      return `contacts table ${mb(rows[0].docs)} MB, its indexes ${mb(rows[0].idx)} MB, TOAST ${mb(rows[0].toast)} MB`;
    };
    const afterImport = async () => {
      // Nothing analyzes a table on a server with autovacuum off (this machine's): the planner then
      // estimates from defaults, and each keyset page of the stream reads every row after its
      // cursor (O(N²) over a stream). Autovacuum would analyze after the bulk load; so does this,
      // unless BENCH_PG_ANALYZE=0 (to see the unanalyzed plans).
      const autovacuum = (await store.pool.query("SHOW autovacuum")).rows[0].autovacuum as string;
      if (autovacuum === "on") return "autovacuum on: no ANALYZE by the bench";
      if (process.env.BENCH_PG_ANALYZE === "0") return "autovacuum off and BENCH_PG_ANALYZE=0: the table is not analyzed (the planner's default estimates)";
      const started = performance.now();
      await store.pool.query(`ANALYZE ${PG_SCHEMA}.contacts`);
      return `autovacuum off: ANALYZE after the import (as autovacuum would), ${Math.round(performance.now() - started)} ms, not timed`;
    };
    return { ...bench, databases, afterImport };
  }
  if (engine === "lmdb") {
    const store = await openLmdbStore({ dir });
    const bench = portBench(store);
    await bench.init();
    const contacts = store.open("contacts");
    const mb = (db: { getStats(): unknown }) => {
      const s = db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
      return Math.round(((s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize) / 1024 / 1024);
    };
    return { ...bench, databases: () => `documents ${mb(contacts.docs)} MB, indexes ${mb(contacts.index)} MB` };
  }
  const bench = portBench(createEmbeddedStore({ dir, compactionIntervalMs: 3_600_000 }));
  await bench.init();
  return bench;
}

// ---------------------------------------------------------------------------------------------
// Child processes

const maxRssMb = () => Math.round(process.resourceUsage().maxRSS / 1024);

/**
 * Peaks of the two parts of RSS (Linux): anonymous memory (heap, buffers: what grows with
 * data held in memory) and file-backed pages (the memory-mapped LMDB file: page cache the
 * kernel can drop under pressure). Sampled, so a peak between samples may be missed.
 */
const rssParts = { anonMb: 0, fileMb: 0 };
/** Current RSS, anonymous and file-backed parts in MB (zeros where /proc is missing). */
function rssNow(): { rss: number; anon: number; file: number } {
  try {
    const status = readFileSync("/proc/self/status", "utf8");
    const mb = (field: string) => Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
    return { rss: mb("VmRSS"), anon: mb("RssAnon"), file: mb("RssFile") };
  } catch {
    return { rss: 0, anon: 0, file: 0 }; // not Linux
  }
}
function sampleRss(): void {
  const now = rssNow();
  rssParts.anonMb = Math.max(rssParts.anonMb, now.anon);
  rssParts.fileMb = Math.max(rssParts.fileMb, now.file);
}
const phaseRss = (now = rssNow()) => `${now.rss} (anon ${now.anon} + file ${now.file})`;
const rate = (n: number, ms: number) => Math.round((n * 1000) / ms);

interface PopulateResult {
  contacts: number;
  importPerSecond: number;
  streamPerSecond: number;
  streamed: number;
  lookupPerSecond: number;
  lookups: number;
  singleInsertsPerSecond: number;
  maxRssMb: number;
  anonMb: number;
  fileMb: number;
  /** RSS in MB at the end of each phase, split into anonymous + file-backed. */
  phases: string;
  /** Size of each LMDB database (lmdb), of the table and indexes (postgres). */
  databases?: string;
  /** What afterImport did (postgres). */
  note?: string;
  /** CPU seconds per phase: this process, and (postgres) the server's backends of the run's database and the whole server. */
  cpu: Record<"import" | "stream" | "lookup", { client: number; server?: number; serverAll?: number }>;
}

/** CPU seconds of this process (user + system). */
const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** A phase's CPU: this process's, and with a database name the server's (bench/postgres.ts). */
function phaseCpu(database: string | undefined) {
  const meter = database ? postgresCpuMeter(database, 0) : undefined;
  const client = ownCpu();
  meter?.start();
  return () => {
    const server = meter?.stop();
    return { client: ownCpu() - client, server: server?.seconds, serverAll: server?.serverSeconds };
  };
}

async function populateChild(engine: Engine, n: number, dir: string): Promise<PopulateResult> {
  const bench = await openEngine(engine, dir);
  const database = engine === "postgres" ? new URL(dir).pathname.slice(1) : undefined;
  const cpu = {} as PopulateResult["cpu"];
  let phaseEnd = phaseCpu(database);
  // ULIDs like the audience unit's contact ids; Math.random keeps crypto out of the measured import.
  const ulid = monotonicFactory(() => Math.random());
  const base = Date.now() - n;
  let started = performance.now();
  // Up to IMPORT_IN_FLIGHT batches outstanding (default 1: each batch awaited before the next).
  const pending = new Set<Promise<void>>();
  for (let i = 0; i < n; i += BATCH) {
    const docs: Contact[] = [];
    const at = new Date(base + i);
    for (let j = i; j < Math.min(n, i + BATCH); j++) docs.push(contact(j, ulid(base + j), at));
    const write = bench.importBatch(docs).finally(() => pending.delete(write));
    pending.add(write);
    if (pending.size >= IMPORT_IN_FLIGHT) await Promise.race(pending);
    sampleRss();
  }
  await Promise.all(pending);
  const importMs = performance.now() - started;
  cpu.import = phaseEnd();
  const phases = [`import ${phaseRss()}`];
  const note = await bench.afterImport?.();

  phaseEnd = phaseCpu(database);
  started = performance.now();
  let streamed = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await bench.page(cursor);
    streamed += page.length;
    sampleRss();
    if (page.length < PAGE) break;
    cursor = page[page.length - 1]._id;
  }
  const streamMs = performance.now() - started;
  cpu.stream = phaseEnd();
  phases.push(`stream ${phaseRss()}`);
  const expected = n - Math.ceil(n / 10);
  if (streamed !== expected) throw new Error(`${engine}: streamed ${streamed} subscribed contacts, expected ${expected}`);

  let lookups = 0;
  let x = 12345;
  phaseEnd = phaseCpu(database);
  started = performance.now();
  while (lookups < LOOKUPS && performance.now() - started < LOOKUP_SECONDS * 1000) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const i = x % n;
    const found = await bench.lookup(emailOf(i));
    if (!found || found.email !== emailOf(i)) throw new Error(`${engine}: lookup of contact ${i} failed`);
    if (++lookups % 1000 === 0) sampleRss();
  }
  const lookupMs = performance.now() - started;
  cpu.lookup = phaseEnd();
  sampleRss();
  phases.push(`lookup ${phaseRss()}`);

  // Single inserts from SINGLE_LANES concurrent callers (each awaits its write before the next).
  let inserted = 0;
  started = performance.now();
  await Promise.all(
    Array.from({ length: SINGLE_LANES }, async (_, lane) => {
      while (inserted < SINGLE_INSERTS && performance.now() - started < SINGLE_SECONDS * 1000) {
        const i = inserted++;
        await bench.insertOne({ _id: `em_${lane}_${i}`, workspaceId: WORKSPACE, to: emailOf(i), subject: "Hello", status: "QUEUED", createdAt: new Date() });
      }
    }),
  );
  const singleMs = performance.now() - started;
  sampleRss();
  const databases = await bench.databases?.();
  await bench.close();
  return {
    contacts: n,
    importPerSecond: rate(n, importMs),
    streamPerSecond: rate(streamed, streamMs),
    streamed,
    lookupPerSecond: rate(lookups, lookupMs),
    lookups,
    singleInsertsPerSecond: rate(inserted, singleMs),
    maxRssMb: maxRssMb(),
    ...rssParts,
    phases: phases.join(", "),
    databases,
    note,
    cpu,
  };
}

async function openChild(engine: Engine, n: number, dir: string): Promise<{ openMs: number; maxRssMb: number }> {
  const started = performance.now();
  const bench = await openEngine(engine, dir);
  const found = await bench.lookup(emailOf(n - 1));
  const openMs = performance.now() - started;
  if (!found) throw new Error(`${engine}: the reopened store lacks contact ${n - 1}`);
  await bench.close();
  return { openMs: Math.round(openMs), maxRssMb: maxRssMb() };
}

function runChild<R>(mode: string, engine: Engine, n: number, dir: string): Promise<R> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", new URL(import.meta.url).pathname, "--store-child", mode, engine, String(n), dir], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.trim().split("\n").pop() ?? "";
      if (code === 0 && line.startsWith("{")) resolve(JSON.parse(line) as R);
      else reject(new Error(`${engine} ${mode} child exited with ${code}: ${out.slice(-500)}`));
    });
  });
}

async function dirSizeMb(dir: string): Promise<number> {
  let bytes = 0;
  for (const f of await readdir(dir)) bytes += (await stat(path.join(dir, f))).size;
  return Math.round(bytes / 1024 / 1024);
}

export interface StoreBenchLine {
  engine: Engine;
  contacts: number;
  importPerSecond: number;
  streamPerSecond: number;
  lookupPerSecond: number;
  openMs: number;
  maxRssMb: number;
  diskMb: number;
  /** CPU seconds per phase (see PopulateResult). */
  cpu: PopulateResult["cpu"];
  streamed: number;
  lookups: number;
}

/** Size of the postgres engine's schema (tables, TOAST and indexes) in MB. */
async function schemaSizeMb(url: string): Promise<number> {
  const client = await adminClient(url);
  try {
    const { rows } = await client.query(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [PG_SCHEMA],
    );
    return Math.round(Number(rows[0].bytes) / 1024 / 1024);
  } finally {
    await client.end();
  }
}

/** The server settings that shape the postgres figures (autovacuum off: no table is analyzed). */
async function serverSettings(url: string): Promise<string> {
  const client = await adminClient(url);
  try {
    const { rows } = await client.query(
      `SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'synchronous_commit', 'fsync', 'autovacuum', 'work_mem', 'jit') ORDER BY name`,
    );
    const version = (await client.query("SHOW server_version")).rows[0].server_version as string;
    return `PostgreSQL ${version}: ${rows.map((r) => `${r.name}=${r.setting}${r.unit ? ` ${r.unit}` : ""}`).join(", ")}`;
  } finally {
    await client.end();
  }
}

export async function runStoreBench(): Promise<StoreBenchLine[]> {
  const n = Number(process.env.BENCH_STORE_CONTACTS ?? 1_000_000);
  const nedbN = Math.min(n, Number(process.env.BENCH_STORE_NEDB_CONTACTS ?? 200_000));
  const postgresMode = benchStore() === "postgres";
  const engines = (process.env.BENCH_STORE_ENGINES ?? (postgresMode ? "lmdb,postgres" : "lmdb,sqlite,nedb")).split(",").map((e) => e.trim()) as Engine[];
  console.log(`contacts: ${n} (nedb: ${nedbN}); one child process per engine and phase; sqlite is the raw engine, lmdb${engines.includes("postgres") ? ", postgres" : ""} and nedb go through the store port`);
  const lines: StoreBenchLine[] = [];
  for (const engine of engines) {
    const count = engine === "nedb" ? nedbN : n;
    const database = engine === "postgres" ? await createBenchDatabase() : undefined;
    // The postgres engine's children get the database's URL where the others get a folder.
    const dir = database ? database.url : await mkdtemp(path.join(os.tmpdir(), `mailroom-bench-store-${engine}-`));
    try {
      if (database) console.log(`  (postgres: database ${database.name}, schema ${PG_SCHEMA}, pool ${process.env.BENCH_POSTGRES_POOL ?? "10 (default)"}; ${await serverSettings(database.url)})`);
      const populated = await runChild<PopulateResult>("populate", engine, count, dir);
      const opened = await runChild<{ openMs: number; maxRssMb: number }>("open", engine, count, dir);
      const line: StoreBenchLine = {
        engine,
        contacts: count,
        importPerSecond: populated.importPerSecond,
        streamPerSecond: populated.streamPerSecond,
        lookupPerSecond: populated.lookupPerSecond,
        openMs: opened.openMs,
        maxRssMb: Math.max(populated.maxRssMb, opened.maxRssMb),
        diskMb: database ? await schemaSizeMb(database.url) : await dirSizeMb(dir),
        cpu: populated.cpu,
        streamed: populated.streamed,
        lookups: populated.lookups,
      };
      lines.push(line);
      console.log(
        `store ${engine}: ${count} contacts, import ${line.importPerSecond}/s, stream ${line.streamPerSecond}/s, lookup ${line.lookupPerSecond}/s, open ${line.openMs} ms, max RSS ${line.maxRssMb} MB`,
      );
      console.log(
        `  (${engine}: ${line.diskMb} MB on disk; single inserts at ${SINGLE_LANES} concurrent callers ${populated.singleInsertsPerSecond}/s; max RSS populate ${populated.maxRssMb} MB [peaks: anonymous ${populated.anonMb} MB, file-backed ${populated.fileMb} MB], open ${opened.maxRssMb} MB)`,
      );
      console.log(`  (${engine}: RSS MB after ${populated.phases}${populated.databases ? `; ${populated.databases}` : ""})`);
      if (populated.note) console.log(`  (${engine}: ${populated.note})`);
      if (postgresMode) printCpu(line);
    } finally {
      if (database) await database.drop();
      else await rm(dir, { recursive: true, force: true });
    }
  }
  if (postgresMode) printVersusLmdb(lines);
  return lines;
}

const pct = (a: number, b: number) => (b > 0 ? `${((a / b) * 100).toFixed(0)} %` : "?");

/** Per phase: the bench process's CPU and (postgres) the server's, in µs per contact. */
function printCpu(line: StoreBenchLine): void {
  const per = (seconds: number | undefined, units: number) => (seconds === undefined ? "?" : `${((seconds * 1e6) / Math.max(units, 1)).toFixed(1)} µs`);
  const units = { import: line.contacts, stream: line.streamed, lookup: line.lookups } as const;
  const parts = (["import", "stream", "lookup"] as const).map((phase) => {
    const c = line.cpu[phase];
    const what = phase === "import" ? "contact" : phase === "stream" ? "streamed contact" : "lookup";
    const server = c.server === undefined ? "" : `, postgres ${c.server.toFixed(1)} s = ${per(c.server, units[phase])} (whole server ${c.serverAll === undefined ? "?" : `${c.serverAll.toFixed(1)} s`})`;
    return `${phase}: bench process ${c.client.toFixed(1)} s = ${per(c.client, units[phase])} per ${what}${server}`;
  });
  console.log(`  (${line.engine} CPU — ${parts.join("; ")})`);
}

/** PostgreSQL's figures as a share of lmdb's from the same run. */
function printVersusLmdb(lines: StoreBenchLine[]): void {
  const lmdb = lines.find((l) => l.engine === "lmdb");
  const postgres = lines.find((l) => l.engine === "postgres");
  if (!lmdb || !postgres) return;
  const cpuMs = (l: StoreBenchLine, phase: "import" | "stream" | "lookup", units: number) => ((l.cpu[phase].client + (l.cpu[phase].server ?? 0)) * 1e6) / Math.max(units, 1);
  console.log(
    `store postgres vs lmdb (same run): import ${pct(postgres.importPerSecond, lmdb.importPerSecond)}, stream ${pct(postgres.streamPerSecond, lmdb.streamPerSecond)}, ` +
    `lookup ${pct(postgres.lookupPerSecond, lmdb.lookupPerSecond)} of lmdb's rate; open ${postgres.openMs} vs ${lmdb.openMs} ms; on disk ${postgres.diskMb} vs ${lmdb.diskMb} MB`,
  );
  console.log(
    `  (CPU per contact, bench process + postgres backends: import ${cpuMs(postgres, "import", postgres.contacts).toFixed(1)} vs lmdb ${cpuMs(lmdb, "import", lmdb.contacts).toFixed(1)} µs, ` +
    `stream ${cpuMs(postgres, "stream", postgres.streamed).toFixed(1)} vs ${cpuMs(lmdb, "stream", lmdb.streamed).toFixed(1)} µs)`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf("--store-child");
  if (at >= 0) {
    const [mode, engine, n, dir] = process.argv.slice(at + 1);
    setInterval(sampleRss, 100).unref();
    const result = mode === "populate" ? await populateChild(engine as Engine, Number(n), dir) : await openChild(engine as Engine, Number(n), dir);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  } else {
    await runStoreBench();
  }
}
