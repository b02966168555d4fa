/**
 * A data dir written before the directory unit was split into accounts and audience (DESIGN
 * §10.6) keeps working: test/fixtures/pre-split/data-dir.tgz was written by the directory's own
 * code at 6a6a0b9 (make-data-dir.ts.txt beside it), and the new units, started on it, find every
 * workspace, key, member, contact, property, template, suppression and group — on the embedded
 * store, and on PostgreSQL after `store copy` put that store in schema mailroom_directory.
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService, ContactStatus } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { connectClient } from "@mailroom/kit";
import { openLmdbStore } from "@mailroom/store/lmdb.js";
import { openPostgresStore } from "@mailroom/store/postgres.js";
import { copyCollection, planUnit } from "../../cli/store-copy/copy.js";
import { freePort, waitForPort } from "../harness/ports.js";
import { createTestDatabase, type TestDatabase } from "../harness/postgres.js";

const FIXTURE = path.resolve("test/fixtures/pre-split/data-dir.tgz");
const MAIN = { accounts: path.resolve("services/accounts/src/main.ts"), audience: path.resolve("services/audience/src/main.ts") };
type Unit = keyof typeof MAIN;
/** Keys the fixture holds: two from its bootstrap document, one created through the use case. */
const KEYS = { acme: "mr_live_acmeupgradefixturekey0000000001", globex: "mr_live_globexupgradefixturekey00000001", created: "mr_live_xFpA0Wk8WnGBM42uHlEvgrWk8s2k9YAg" };

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startUnit(unit: Unit, env: Record<string, string>): Running {
  let out = "";
  const child = spawn(process.execPath, ["--import", "tsx", MAIN[unit]], { env: { ...process.env, MAILROOM_LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function stop(p: Running) {
  if (p.child.exitCode === null) p.child.kill("SIGTERM");
  return p.exited;
}

/** Every document of every collection of an embedded store, by collection. */
async function records(dir: string): Promise<Record<string, unknown[]>> {
  const store = await openLmdbStore({ dir, ttlSweepIntervalMs: 2 ** 31 - 1 });
  try {
    const out: Record<string, unknown[]> = {};
    for (const name of store.collectionNames().sort()) {
      const docs = await store.collection(name).find({}, { sort: { _id: 1 } });
      if (docs.length) out[name] = docs;
    }
    return out;
  } finally {
    await store.close();
  }
}

/** Starts both units on `env`, runs `body` with clients of them, stops them (both must exit 0). */
async function withUnits(env: Record<string, string>, body: (c: ReturnType<typeof clientsOf>, procs: Record<Unit, Running>) => Promise<void>) {
  const ports = { accounts: await freePort(), audience: await freePort() };
  const urls = { MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${ports.audience}` };
  // No NATS listens there: the units serve without it (their events wait), away from other runs' servers.
  const nats = `nats://127.0.0.1:${await freePort()}`;
  const procs = {
    accounts: startUnit("accounts", { ...env, ...urls, MAILROOM_NATS_URL: nats, MAILROOM_SERVICE_PORT: String(ports.accounts) }),
    audience: startUnit("audience", { ...env, ...urls, MAILROOM_NATS_URL: nats, MAILROOM_SERVICE_PORT: String(ports.audience) }),
  };
  try {
    await Promise.all([waitForPort(ports.accounts, 30_000), waitForPort(ports.audience, 30_000)]);
    await body(clientsOf(urls.MAILROOM_ACCOUNTS_URL, urls.MAILROOM_AUDIENCE_URL), procs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- accounts ---\n${procs.accounts.output().slice(-3000)}\n--- audience ---\n${procs.audience.output().slice(-3000)}`, { cause: err });
  } finally {
    expect(await Promise.all([stop(procs.accounts), stop(procs.audience)])).toEqual([0, 0]);
  }
}

function clientsOf(accountsUrl: string, audienceUrl: string) {
  return {
    accounts: connectClient(AccountsService, accountsUrl),
    templates: connectClient(TemplateService, accountsUrl),
    contacts: connectClient(ContactService, audienceUrl),
    groups: connectClient(GroupService, audienceUrl),
  };
}

/** Everything the fixture wrote, found through both units' services. */
async function expectFixtureFound(c: ReturnType<typeof clientsOf>) {
  const workspaces = (await c.accounts.listWorkspaces({})).workspaces;
  expect(workspaces.map((w) => w.id).sort()).toEqual(["ws_acme", "ws_globex"]);
  expect(workspaces.find((w) => w.id === "ws_acme")).toMatchObject({ name: "Acme", timezone: "Europe/Paris" });

  expect(await c.accounts.authenticate({ apiKey: KEYS.acme })).toMatchObject({ workspaceId: "ws_acme" });
  expect(await c.accounts.authenticate({ apiKey: KEYS.created })).toMatchObject({ workspaceId: "ws_acme" });
  expect(await c.accounts.authenticate({ apiKey: KEYS.globex })).toMatchObject({ workspaceId: "ws_globex" });
  expect((await c.accounts.listApiKeys({ workspaceId: "ws_acme" })).apiKeys.map((k) => k.name).sort()).toEqual(["Bootstrap", "Server key"]);
  expect((await c.accounts.listMembers({ workspaceId: "ws_acme" })).emails.sort()).toEqual(["editor@acme.test", "owner@acme.test"]);
  expect((await c.accounts.checkSender({ workspaceId: "ws_acme", from: "hello@acme.test" })).allowed).toBe(true);

  expect((await c.templates.getTemplate({ workspaceId: "ws_acme", name: "receipt" })).template).toMatchObject({ subject: "Your receipt" });
  expect((await c.templates.getTemplate({ workspaceId: "ws_globex", name: "welcome" })).template).toMatchObject({ subject: "Welcome" });
  await expect(c.templates.getTemplate({ workspaceId: "ws_globex", name: "receipt" })).rejects.toThrow(/receipt/);

  const ann = (await c.contacts.getContact({ workspaceId: "ws_acme", email: "ann@example.com" })).contact!;
  expect(ann).toMatchObject({ firstName: "Ann", status: ContactStatus.SUBSCRIBED });
  expect(ann.properties).toMatchObject({ plan: "pro" });
  expect((await c.contacts.getContact({ workspaceId: "ws_acme", email: "bob@example.com" })).contact!.status).toBe(ContactStatus.UNSUBSCRIBED);
  expect((await c.contacts.listContacts({ workspaceId: "ws_acme", page: { limit: 500 } })).contacts).toHaveLength(52);
  expect((await c.contacts.listContacts({ workspaceId: "ws_globex", page: { limit: 500 } })).contacts.map((x) => x.email)).toEqual(["carol@example.org"]);
  expect((await c.contacts.listContactProperties({ workspaceId: "ws_acme" })).properties.map((p) => p.slug)).toContain("plan");
  expect((await c.contacts.checkSuppression({ workspaceId: "ws_acme", emails: ["bounced@example.com", "ann@example.com"] })).suppressed.map((s) => s.email)).toEqual(["bounced@example.com"]);

  const groups = (await c.groups.listGroups({ workspaceId: "ws_acme" })).groups;
  expect(groups.map((g) => g.publicId)).toEqual(["customers"]);
  expect((await c.groups.listGroupContacts({ workspaceId: "ws_acme", groupId: "customers" })).members.map((m) => m.contactId)).toEqual([ann.id]);

  // Across the two units: the accounts unit previews a template with the audience unit's contact.
  const preview = await c.templates.renderTemplate({ workspaceId: "ws_acme", name: "receipt", contactId: ann.id });
  expect(preview.html).toContain("Hi Ann");
}

describe("a data dir written before the split into accounts and audience", () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "mailroom-pre-split-"));
  });
  afterAll(async () => rm(root, { recursive: true, force: true }));

  it("embedded store: each unit adopts its collections once; the old store is left as it was", async () => {
    const dataDir = path.join(root, "embedded");
    execFileSync("mkdir", ["-p", dataDir]);
    execFileSync("tar", ["xzf", FIXTURE, "-C", dataDir]);
    const old = path.join(dataDir, "directory");
    const before = await records(old);
    expect(Object.keys(before)).toEqual(expect.arrayContaining(["api_keys", "contacts", "groups", "suppressions", "templates", "workspaces"]));

    await withUnits({ MAILROOM_DATA_DIR: dataDir }, async (c, procs) => {
      await expectFixtureFound(c);
      expect(procs.accounts.output()).toMatch(/adopted \d+ documents from the directory store/);
      expect(procs.audience.output()).toMatch(/adopted \d+ documents from the directory store/);
      // A change after the upgrade, which a second adoption would undo.
      await c.contacts.deleteContact({ workspaceId: "ws_acme", email: "bob@example.com" });
    });
    expect(existsSync(path.join(dataDir, "accounts", "store.mdb"))).toBe(true);
    expect(existsSync(path.join(dataDir, "audience", "store.mdb"))).toBe(true);
    // The old store's records are as they were (reading it may leave empty collections it was asked for).
    expect(await records(old)).toEqual(before);

    // A restart adopts nothing again: the deleted contact stays deleted.
    await withUnits({ MAILROOM_DATA_DIR: dataDir }, async (c, procs) => {
      await expect(c.contacts.getContact({ workspaceId: "ws_acme", email: "bob@example.com" })).rejects.toThrow(/not found/i);
      expect((await c.contacts.listContacts({ workspaceId: "ws_acme", page: { limit: 500 } })).contacts).toHaveLength(51);
      expect(await c.accounts.authenticate({ apiKey: KEYS.acme })).toMatchObject({ workspaceId: "ws_acme" });
      expect(procs.accounts.output() + procs.audience.output()).not.toMatch(/adopted \d+ documents/);
    });
  }, 120_000);

  it("PostgreSQL: the directory's schema, copied there by `store copy`, is adopted the same way", async () => {
    const dataDir = path.join(root, "for-postgres");
    execFileSync("mkdir", ["-p", dataDir]);
    execFileSync("tar", ["xzf", FIXTURE, "-C", dataDir]);
    const db: TestDatabase = await createTestDatabase();
    try {
      // The pre-split deployment on PostgreSQL: the directory's collections in schema mailroom_directory.
      const source = await openLmdbStore({ dir: path.join(dataDir, "directory"), ttlSweepIntervalMs: 2 ** 31 - 1 });
      const target = await openPostgresStore({ url: db.url, service: "directory", poolSize: 2 });
      try {
        const plan = await planUnit("directory", source, target);
        for (const c of plan.collections) await copyCollection(plan, c, 500, () => {});
      } finally {
        await Promise.all([source.close(), target.close()]);
      }
      // No data dir of the old layout this time: only the database holds the records.
      const empty = path.join(root, "postgres-units");
      await withUnits({ MAILROOM_DATA_DIR: empty, MAILROOM_POSTGRES_URL: db.url }, async (c) => {
        await expectFixtureFound(c);
      });
    } finally {
      await db.drop();
    }
  }, 120_000);
});
