/**
 * `npx mailroom store copy --to <postgres url>` (DESIGN §10.1): the real units fill a data dir
 * with every kind of record through the public API and the CLI, stop, and the copy must leave
 * each unit's schema on PostgreSQL holding exactly the embedded store's documents, read back
 * through the store port; a copy killed mid-way and run again ends the same, having copied
 * nothing twice beyond the batch in flight. Each run uses databases of its own, dropped at the end.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLmdbStore, type LmdbStore } from "@mailroom/store/lmdb.js";
import { openStore } from "@mailroom/store/open.js";
import { postgresConnectionString } from "@mailroom/store/postgres.js";
import { adminClient, TEST_POSTGRES_URL } from "@mailroom/store/postgres.fixture.js";
import type { Doc, Store } from "@mailroom/store/port.js";
import { runCli } from "../../cli/program.js";
import { PROGRESS_COLLECTION } from "../../cli/store-copy/copy.js";
import { unitsWithStores } from "../../cli/store-copy/data-dir.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { startReceiver } from "../webhooks/receiver.js";

const WS = "ws_copy";
const KEY = "mr_test_copy_1";
const REPO = path.resolve(import.meta.dirname, "../..");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = await adminClient();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A database of this run's own (the name is ours: [a-z0-9_], safe in DDL). */
async function createDatabase() {
  const name = `mailroom_copy_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) };
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A unit's store as the units open it: embedded in the data dir, or its schema on PostgreSQL. */
const openEmbedded = (dataDir: string, service: string) => openStore({ service, dataDir });
const openTarget = (url: string, service: string) => openStore({ service, dataDir: "", postgresUrl: url });

/** `mailroom store copy …` in this process, as a non-TTY run. */
async function copy(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["store", "copy", ...args], {
    env: {}, interactive: false,
    output: (json) => ({ out: (l) => void out.push(l), err: (l) => void err.push(l), json }),
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000, everyMs = 150): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last: ${JSON.stringify(v).slice(0, 1000)}`);
    await sleep(everyMs);
  }
}

/** Every document of every collection of a unit, by collection, in _id order, read through the port. */
async function contents(store: Store, names: string[]): Promise<Record<string, Doc[]>> {
  const all: Record<string, Doc[]> = {};
  for (const name of names) all[name] = await store.collection(name).find({}, { sort: { _id: 1 } });
  return all;
}

/** Workspaces, keys, contacts, templates, emails, a broadcast, an automation, a webhook, suppressions, groups, segments, topics. */
async function fillSystem(sys: TestSystem, hookUrl: string, hookCount: () => number): Promise<void> {
  const api = async (method: string, pathname: string, body?: unknown, headers?: Record<string, string>) => {
    const res = await sys.api(method, pathname, { key: KEY, body, headers });
    if (res.status >= 300) throw new Error(`${method} ${pathname}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const cli = async (...args: string[]) => {
    const err: string[] = [];
    const code = await runCli(args, {
      env: { MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${sys.ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${sys.ports.audience}`, MAILROOM_WORKSPACE: WS },
      interactive: false, output: (json) => ({ out: () => undefined, err: (l) => void err.push(l), json }),
    });
    if (code !== 0) throw new Error(`mailroom ${args.join(" ")}: ${err.join("\n")}`);
  };
  await cli("workspace", "create", "--id", "ws_copy_two", "--name", "Two", "--timezone", "Europe/Paris");
  await cli("key", "create", "--name", "ops");
  await cli("suppression", "add", "blocked@example.test", "--reason", "manual");
  await cli("contact", "add", "cli@example.test", "--first-name", "Cli");

  await api("POST", "/v1/contacts", { properties: { email: "dan@example.test", firstName: "Dan", plan: "pro" } });
  await api("POST", "/v1/templates", { name: "receipt", subject: "Receipt for {{firstName}}", html: "<p>Thanks {{firstName}}</p>", fromEmail: "team@acme.test" });
  await api("POST", "/v1/groups", { publicId: "newsletter", displayName: "Newsletter" });
  await api("POST", "/v1/segments", { name: "Pro", filter: { "properties.plan": "pro" } });
  await api("POST", "/v1/topics", { name: "Product news", defaultSubscription: "OPT_IN" });
  await api("POST", "/v1/webhooks", { url: hookUrl, events: ["EMAIL_SENT", "EMAIL_DELIVERED"] });

  const raw = { from: "Acme <team@acme.test>", to: "eve@example.test", subject: "Hello", html: "<p>Hello <a href=\"https://acme.test\">there</a></p>" };
  await api("POST", "/v1/emails", raw, { "idempotency-key": "copy-1" });
  await api("POST", "/v1/emails", { template: "welcome", to: "ann@example.test", variables: { firstName: "Ann" } });
  await api("POST", "/v1/emails", { ...raw, to: "later@example.test", sendAt: new Date(Date.now() + 3_600_000).toISOString() });

  const automation = await api("POST", "/v1/automations", {
    name: "Welcome", trigger: { type: "contact_created" }, steps: [{ id: "s", type: "send", template: "welcome" }],
  });
  await api("POST", `/v1/automations/${automation.automation.id}/activate`, {});
  await api("POST", "/v1/contacts", { properties: { email: "fay@example.test", firstName: "Fay" } });

  const created = await api("POST", "/v1/broadcasts", {
    name: "News", subject: "News for {{firstName}}", fromEmail: "news@acme.test", fromName: "Acme", html: "<p>Hi {{firstName}}</p>", audience: { all: true },
  });
  const id = created.broadcast.id as string;
  await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });

  // What the units do after answering: the broadcast sends, the automation's run completes, deliveries and webhook calls land.
  await until("the broadcast completes", () => api("GET", `/v1/broadcasts/${id}`), (b) => b.broadcast.status === "COMPLETED", 60_000);
  await until("the automation's run completes", () => api("GET", `/v1/automations/${automation.automation.id}/runs`), (r) => r.runs.items.some((x: any) => x.status === "COMPLETED"));
  await until("webhook calls arrive", async () => hookCount(), (n) => n >= 2);
  await sleep(1_000);
}

describe("mailroom store copy (real units, PostgreSQL)", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const databases: { drop(): Promise<unknown> }[] = [];
  const scratch: string[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await startSystem({
      store: "embedded",
      bootstrap: { workspaces: [{
        id: WS, name: "Copy", timezone: "UTC",
        apiKeys: [{ key: KEY, scopes: ["api_user"] }],
        verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
        flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
        monthlyLimit: 10_000, sendingAccountNew: false,
        contactProperties: [{ slug: "plan", type: "string" }],
        contacts: [{ email: "ann@example.test", firstName: "Ann", subscribed: true, properties: { plan: "pro" } }],
        templates: [{ name: "welcome", subject: "Welcome {{firstName}}", html: "<p>Hi {{firstName}}</p>", fromEmail: "team@acme.test" }],
      }] },
    });
    await fillSystem(sys, receiver.url, () => receiver.received.length);
    // Stopped, the data dir stays (sys.stop() removes it at the end).
    await sys.processes.stop();
  }, 180_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
    for (const db of databases) await db.drop();
    for (const dir of scratch) await rm(dir, { recursive: true, force: true });
  });

  it("refuses a target that is not PostgreSQL, and says plainly when it cannot connect", async () => {
    const mongo = await copy("--to", "mongodb://user:secret@db.test/x", "--data-dir", sys.dataDir);
    expect(mongo).toMatchObject({ code: 1, err: expect.stringMatching(/^error: --to must be a PostgreSQL URL \(postgres:\/\/.*\), not "mongodb:\/\/\*\*\*:\*\*\*@db\.test\/x"$/) });
    const refused = await copy("--to", "postgres://user:secret@127.0.0.1:1/nothing", "--data-dir", sys.dataDir);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^error: cannot use PostgreSQL at postgres:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:1\/nothing: \S/);
    expect(refused.err).not.toMatch(/\n\s+at /);
    expect(refused.err).not.toContain("secret");
    const noDir = await copy("--to", "postgres://127.0.0.1/x", "--data-dir", path.join(sys.dataDir, "missing"));
    expect(noDir).toMatchObject({ code: 1, err: expect.stringMatching(/no data dir at .*missing/) });
  });

  it("refuses while units run on the data dir: npm start's pid files, or a process holding a store open", async () => {
    const db = await createDatabase();
    databases.push(db);
    // npm start's <dataDir>/run/<unit>.pid naming a live process (this one's parent).
    await mkdir(path.join(sys.dataDir, "run"), { recursive: true });
    await writeFile(path.join(sys.dataDir, "run", "email.pid"), `${process.ppid}\n`);
    try {
      expect(await copy("--to", db.url, "--data-dir", sys.dataDir)).toMatchObject({ code: 1, err: expect.stringMatching(`units are running on ${sys.dataDir}: email \\(pid ${process.ppid}\\)`) });
    } finally {
      await rm(path.join(sys.dataDir, "run", "email.pid"));
    }
    // A process that has read the audience unit's store (as a unit does when it starts).
    const holder = spawn(process.execPath, ["--input-type=module", "-e", `
      import { open } from "lmdb";
      const env = open({ path: ${JSON.stringify(path.join(sys.dataDir, "audience", "store.mdb"))}, readOnly: true });
      env.get("x");
      console.log("ready");
      setInterval(() => env.get("x"), 1000);`], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] });
    try {
      await new Promise((resolve) => holder.stdout!.once("data", resolve));
      const res = await copy("--to", db.url, "--data-dir", sys.dataDir);
      expect(res).toMatchObject({ code: 1, err: expect.stringMatching(`audience has ${sys.dataDir}/audience open \\(pid ${holder.pid}\\): stop the units`) });
    } finally {
      // Gone before the next test copies (a live pid in the reader table is refused).
      const gone = new Promise((resolve) => holder.once("exit", resolve));
      holder.kill("SIGKILL");
      await gone;
    }
  });

  it("copies every collection of every unit, document for document; a second run copies nothing", async () => {
    const db = await createDatabase();
    databases.push(db);
    const first = await copy("--to", db.url, "--data-dir", sys.dataDir);
    expect(first.code, first.err).toBe(0);
    const units = unitsWithStores(sys.dataDir);
    expect(units).toEqual(expect.arrayContaining(["accounts", "audience", "automation", "broadcast", "email", "webhooks"]));
    // A data dir begun after the split has no store of the old directory unit (nothing to adopt, nothing made).
    expect(units).not.toContain("directory");

    let documents = 0;
    for (const unit of units) {
      const source = await openEmbedded(sys.dataDir, unit);
      const target = await openTarget(db.url, unit);
      try {
        const names = (source as unknown as LmdbStore).collectionNames();
        const expected = await contents(source, names);
        expect(await contents(target, names), unit).toEqual(expected);
        const count = Object.values(expected).reduce((n, docs) => n + docs.length, 0);
        documents += count;
        // One line per collection on a non-TTY, and the summary's row for the unit.
        for (const name of names) expect(first.err).toMatch(new RegExp(`^${unit}/${escape(name)}: ${expected[name].length} documents \\(${expected[name].length} copied now, `, "m"));
        expect(first.out).toMatch(new RegExp(`^${unit}\\s+${names.length}\\s+${count}\\s+${count}$`, "m"));
      } finally {
        await source.close();
        await target.close();
      }
    }
    expect(first.out).toMatch(new RegExp(`^total\\s+\\d+\\s+${documents}\\s+${documents}$`, "m"));
    expect(first.out).toMatch(/^copied .* to postgres:\/\/.* in \d+(\.\d)? s$/m);
    // Every kind of record is there (not an empty data dir copied "exactly").
    const nonEmpty = await recordCounts(sys.dataDir);
    for (const [unit, name] of [["audience", "contacts"], ["accounts", "workspaces"], ["audience", "suppressions"], ["email", "emails"],
      ["broadcast", "broadcasts"], ["automation", "automations"], ["webhooks", "webhooks"]]) {
      expect(nonEmpty[`${unit}/${name}`] ?? 0, `${unit}/${name} in ${JSON.stringify(nonEmpty)}`).toBeGreaterThan(0);
    }

    const second = await copy("--to", db.url, "--data-dir", sys.dataDir);
    expect(second.code, second.err).toBe(0);
    expect(second.out).toMatch(new RegExp(`^total\\s+\\d+\\s+${documents}\\s+0$`, "m"));
    expect(second.err).toMatch(/copied by an earlier run/);
  }, 120_000);

  it("resumes a copy killed mid-way: the same documents in the end, nothing copied twice beyond the batch in flight", async () => {
    const db = await createDatabase();
    databases.push(db);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-copy-"));
    scratch.push(dataDir);
    const TOTAL = 30_000;
    const BATCH = 200;
    const source = await openLmdbStore({ dir: path.join(dataDir, "audience") });
    for (let i = 0; i < TOTAL; i += 5_000) {
      await source.collection("contacts").insertMany(Array.from({ length: 5_000 }, (_, j) => contact(i + j)));
    }
    await source.close();

    const child = spawn(process.execPath, ["bin/mailroom.js", "store", "copy", "--to", db.url, "--data-dir", dataDir, "--batch-size", String(BATCH)], {
      cwd: REPO, stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const target = await openTarget(db.url, "audience");
    try {
      const progress = () => target.collection(PROGRESS_COLLECTION).findOne({ _id: "contacts" }).catch(() => null);
      await until("the copy is under way", progress, (p) => (p?.copied as number) >= 10 * BATCH, 60_000, 20);
      child.kill("SIGKILL");
      await exited;
      const stopped = (await progress())!;
      expect(stopped.done, "killed before it finished").toBe(false);
      const recorded = stopped.copied as number;
      expect(recorded).toBeLessThan(TOTAL);

      const resumed = await copy("--to", db.url, "--data-dir", dataDir, "--batch-size", String(BATCH));
      expect(resumed.code, resumed.err).toBe(0);
      // The second run started after the last recorded batch: it copied only the rest.
      expect(resumed.err).toContain(`audience/contacts: ${TOTAL} documents (${TOTAL - recorded} copied now, resumed after ${recorded} copied earlier`);

      const reopened = await openEmbedded(dataDir, "audience");
      try {
        expect(await target.collection("contacts").find({}, { sort: { _id: 1 } })).toEqual(await reopened.collection("contacts").find({}, { sort: { _id: 1 } }));
      } finally {
        await reopened.close();
      }
      // PostgreSQL's own count of rows written: every document once, plus at most the batch in flight.
      const written = await until("PostgreSQL's statistics", () => rowsWritten(db.url), (w) => w.inserted >= TOTAL, 15_000);
      expect(written.inserted).toBeLessThanOrEqual(TOTAL + BATCH);
      expect(written.deleted).toBeLessThanOrEqual(BATCH);
    } finally {
      child.kill("SIGKILL");
      await target.close();
    }
  }, 180_000);
});

/** A contact-like document with the value types the units store (dates, nested objects, arrays, numbers, null). */
const contact = (i: number): Doc => ({
  _id: `ws_bulk:c_${String(i).padStart(6, "0")}`,
  workspaceId: "ws_bulk", email: `person${i}@bulk.test`, firstName: `P${i}`, status: i % 10 ? "SUBSCRIBED" : "UNSUBSCRIBED",
  properties: { plan: i % 3 ? "free" : "pro", seats: i % 50, vip: i % 7 === 0 }, groups: [`g${i % 4}`], lastOpenedAt: i % 5 ? null : new Date(1_750_000_000_000 + i),
  createdAt: new Date(1_700_000_000_000 + i * 1000),
});

/** Documents per `<unit>/<collection>` of a data dir. */
async function recordCounts(dataDir: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const unit of unitsWithStores(dataDir)) {
    const store: LmdbStore = await openLmdbStore({ dir: path.join(dataDir, unit) });
    try {
      for (const name of store.collectionNames()) counts[`${unit}/${name}`] = await store.collection(name).countDocuments({});
    } finally {
      await store.close();
    }
  }
  return counts;
}

/** Rows inserted into and deleted from the audience unit's contacts table, by PostgreSQL's statistics. */
async function rowsWritten(url: string): Promise<{ inserted: number; deleted: number }> {
  const client = new pg.Client({ connectionString: postgresConnectionString(url) });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT coalesce(sum(n_tup_ins), 0)::int AS inserted, coalesce(sum(n_tup_del), 0)::int AS deleted FROM pg_stat_user_tables WHERE schemaname = 'mailroom_audience' AND relname = 'contacts'",
    );
    return rows[0];
  } finally {
    await client.end();
  }
}
