/**
 * Two complete sets of units (DESIGN §10.1 "Beyond one machine") against one PostgreSQL
 * database and a 3-node NATS cluster (every stream replicated 3 times): set A on node 1, set B
 * on node 2, one SMTP relay for both. 300 transactional emails (batches through both gateways,
 * half each), a few scheduled emails and a 10,000-contact broadcast are under way when every
 * process of set A is SIGKILLed. Set B alone must finish all of it: every recipient at least
 * once, the broadcast COMPLETED, duplicates bounded by what set A had in its hands, and each
 * lease set A held taken over by set B within the lease time.
 *
 * What "in A's hands" was is read from the shared database right after the kill: delivery
 * claims (`mailroom_delivery.deliveries`, state "sending", claimed by A's delivery process and
 * without an outcome), emails claimed for publishing by A's email process
 * (`mailroom_email.emails`, dispatch "claimed"), and the broadcast when A's sender held its lease.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { postgresConnectionString } from "@mailroom/store/postgres.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { createTestDatabase, type TestDatabase } from "../harness/postgres.js";
import { startSmtpSink, type SmtpSink } from "../harness/smtp-sink.js";
import { natsServerAvailable, startNatsCluster, type NatsCluster } from "./nats-cluster.js";

const WS = "ws_twosets";
const KEY = "mr_test_twosets_1";
const TRANSACTIONAL = 300;
const PER_BATCH = 25;
const SCHEDULED = 10;
const CONTACTS = 10_000;
/** The scheduled and transactional sends (and, within them, the kill) start once this many broadcast messages reached the relay. */
const KILL_AT_BROADCAST = 1_500;
/** Every lease and ack wait of the test: set B takes over set A's work after this. */
const LEASE_MS = 4_000;
/** Room above a lease for the survivor's polling (scheduler 500 ms, sender 250 ms) and a loaded 2-core machine. */
const TAKEOVER_MARGIN_MS = 6_000;
const DELIVERY_CONCURRENCY = 16;
const BROADCAST_PAGES_AT_ONCE = 4;
const PAGE_RECIPIENTS_AT_ONCE = 16;
/**
 * The most messages one delivery process can have handed to the relay without having recorded
 * their outcome: a message reaches the relay only after its delivery id was claimed in the
 * shared ledger, and the claim is closed by the outcome right after the SMTP transaction, so
 * what a SIGKILL can leave sent-but-unrecorded (and set B, after the ack wait, sends again) is
 * what was between claim and outcome: at most the transactional lane's jobs at once plus the
 * broadcast lane's pages at once × each page's recipients at once. Nothing else duplicates:
 * a batch retried through B carries the same idempotency keys, and an email or broadcast page
 * that A published and B publishes again after the lease carries the same delivery ids (the
 * ledger sends each once).
 */
const DUPLICATE_BOUND = DELIVERY_CONCURRENCY + BROADCAST_PAGES_AT_ONCE * PAGE_RECIPIENTS_AT_ONCE;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const available = natsServerAvailable();
if (!available) console.log("test/cluster: nats-server not found; the two-sets suite is skipped");

const bootstrap = {
  workspaces: [{
    id: WS, name: "Two sets", timezone: "UTC",
    apiKeys: [{ key: KEY, scopes: ["api_user"] }],
    verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
    flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
    monthlyLimit: 1_000_000, sendingAccountNew: false,
  }],
};

/**
 * Not in `npm test` yet (MAILROOM_TEST_TWO_SETS=1 runs it): it is not green. Every recipient is
 * reached and the broadcast completes in every run, but the take-over check finds set A's
 * delivery holding no claims at the kill in most runs. The 3–6 duplicate broadcast messages its
 * runs saw with no dead process to blame had a cause since fixed: a live delivery's heartbeat
 * extended the JetStream message but not `claimedAt` in its records (deliverer.ts now refreshes
 * both). Left open in the closing note of the stop that added it.
 */
const enabled = process.env.MAILROOM_TEST_TWO_SETS === "1";
if (available && !enabled) console.log("test/cluster/two-sets: skipped (MAILROOM_TEST_TWO_SETS=1 runs it; not green yet, see the file's note)");

describe.skipIf(!available || !enabled)("two sets of units on one PostgreSQL and a 3-node NATS cluster, one set lost mid-send", () => {
  let cluster: NatsCluster;
  let database: TestDatabase;
  let sink: SmtpSink;
  let a: TestSystem;
  let b: TestSystem;
  let db: pg.Client;

  beforeAll(async () => {
    [cluster, database, sink] = await Promise.all([startNatsCluster(3), createTestDatabase(), startSmtpSink()]);
    const env = (natsUrl: string) => ({
      MAILROOM_NATS_URL: natsUrl,
      MAILROOM_NATS_REPLICAS: "3",
      MAILROOM_SMTP_URL: sink.url,
      MAILROOM_LOG_LEVEL: "warn",
      MAILROOM_DELIVERY_CONCURRENCY: String(DELIVERY_CONCURRENCY),
      MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: String(BROADCAST_PAGES_AT_ONCE),
      MAILROOM_DELIVERY_PAGE_CONCURRENCY: String(PAGE_RECIPIENTS_AT_ONCE),
      // The broadcast lane's consumer is shared by both sets: unacked pages across both at most
      // what both handle at once, so neither process pulls pages it leaves waiting (unheartbeated
      // past the ack wait, such a page is redelivered while still queued) and both sets send.
      MAILROOM_DELIVERY_BROADCAST_MAX_ACK_PENDING: String(2 * BROADCAST_PAGES_AT_ONCE),
      MAILROOM_SMTP_POOL_SIZE: "8",
      MAILROOM_SMTP_TIMEOUT_MS: "5000",
      // The leases set B waits out before it takes set A's work over.
      MAILROOM_DELIVERY_ACK_WAIT_MS: String(LEASE_MS),
      MAILROOM_EMAIL_CLAIM_LEASE_MS: String(LEASE_MS),
      MAILROOM_BROADCAST_LEASE_MS: String(LEASE_MS),
      MAILROOM_AUTOMATION_LEASE_MS: String(LEASE_MS),
    });
    // Set B starts once set A is ready, so the bootstrap is loaded by one directory at a time.
    a = await startSystem({ bootstrap, database, smtp: false, env: env(cluster.nodes[0].url) });
    b = await startSystem({ bootstrap, database, smtp: false, env: env(cluster.nodes[1].url) });
    db = new pg.Client({ connectionString: postgresConnectionString(database.url) });
    await db.connect();
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await Promise.all([a?.stop(), b?.stop()]);
    await Promise.all([sink?.stop(), cluster?.stop()]);
    await database?.drop();
  }, 60_000);

  it("finishes every send on the surviving set, duplicates bounded, leases taken over in time", async () => {
    const gateways = [a, b];
    /** A request through set `i`'s gateway; once set A is gone, through set B's (a client's failover). */
    let aDead = false;
    const call = async (i: number, method: string, pathname: string, body?: unknown) => {
      for (let tries = 0; ; tries++) {
        const sys = aDead ? b : gateways[i];
        try {
          const res = await sys.api(method, pathname, { key: KEY, body });
          // 409 idempotency_request_in_progress: the first try died with set A; its lease runs out, then the answer comes.
          if ((res.status === 409 || res.status >= 500 || res.status === 429) && tries < 40) {
            await sleep(500);
            continue;
          }
          return res;
        } catch (err) {
          // Set A's gateway died under the request: retry (through B) with the same idempotency keys.
          if (tries >= 40) throw err;
          await sleep(200);
        }
      }
    };

    // 1. 10,000 contacts through the public API, half through each gateway.
    const importStarted = Date.now();
    await Promise.all(Array.from({ length: CONTACTS / 1_000 }, async (_, chunk) => {
      const contacts = Array.from({ length: 1_000 }, (_, k) => ({ properties: { email: `c${chunk * 1_000 + k}@example.test`, firstName: `C${chunk * 1_000 + k}` } }));
      const res = await call(chunk % 2, "POST", "/v1/contacts/batch", { contacts });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBeLessThan(300);
    }));
    const importMs = Date.now() - importStarted;

    const kind = (to: string) => (to.startsWith("c") ? "broadcast" : to.startsWith("tx") ? "transactional" : to.startsWith("sched") ? "scheduled" : "other");
    const receivedOf = (k: string) => sink.messages.filter((m) => m.to.some((t) => kind(t) === k));

    // 2. The broadcast, through set A's gateway.
    const created = await call(0, "POST", "/v1/broadcasts", {
      name: "two sets", subject: "Hello {{firstName}}", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<p>Hi {{firstName}}</p>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const broadcastId: string = created.body.broadcast.id;
    const scheduled = await call(0, "POST", `/v1/broadcasts/${broadcastId}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const broadcastStarted = Date.now();
    // Broadcast messages at the relay every 5 s, for the log line.
    const samples: number[] = [];
    const sampler = setInterval(() => samples.push(receivedOf("broadcast").length), 5_000);
    for (const deadline = Date.now() + 90_000; receivedOf("broadcast").length < KILL_AT_BROADCAST && Date.now() < deadline;) await sleep(50);

    // 3. Scheduled emails due in two seconds (around the kill), through both gateways.
    const sendAt = new Date(Date.now() + 2_000).toISOString();
    await Promise.all(Array.from({ length: SCHEDULED }, async (_, i) => {
      const res = await call(i % 2, "POST", "/v1/emails", { from: "Acme <team@acme.test>", to: `sched${i}@example.test`, subject: `Scheduled ${i}`, html: "<p>Later</p>", sendAt, idempotencyKey: `sched-${i}` });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }));

    // 4. 300 transactional emails in batches, alternating gateways, 4 requests at once; set A
    // is killed as the 7th batch is taken, with batches of both gateways in flight. The batches
    // addressed to A after that go to B (with their idempotency keys), as a client fails over.
    const batches = Array.from({ length: TRANSACTIONAL / PER_BATCH }, (_, n) =>
      Array.from({ length: PER_BATCH }, (_, k) => {
        const i = n * PER_BATCH + k;
        return { from: "Acme <team@acme.test>", to: `tx${i}@example.test`, subject: `Transactional ${i}`, html: "<p>Hello</p>", idempotencyKey: `tx-${i}` };
      }),
    );
    let killedAt = 0;
    let atKill = { broadcast: 0, transactional: 0, scheduled: 0, status: "" };
    /** Delivery claims of set A's delivery process still open (sent or sending, no outcome yet). */
    const heldBy = async (deliveryPid: number) => (await db.query(
      `SELECT c._id FROM mailroom_delivery.deliveries c WHERE c.doc->>'state' = 'sending' AND c.doc->>'claimedBy' LIKE $1
         AND NOT EXISTS (SELECT 1 FROM mailroom_delivery.delivery_outcomes o WHERE o._id = c._id)`,
      [`%-${deliveryPid}-%`],
    )).rows.map((r) => r._id as string);
    const killA = async () => {
      // Mid-send: once set A's delivery is inside SMTP transactions (its claims open in the ledger).
      for (const deadline = Date.now() + 15_000; (await heldBy(ownersOf(a).delivery)).length === 0 && Date.now() < deadline;) await sleep(10);
      const exited = a.processes.units.map((u) => u.child.exitCode !== null || u.child.signalCode !== null ? undefined : new Promise((r) => u.child.once("exit", r)));
      for (const u of a.processes.units) u.child.kill("SIGKILL");
      killedAt = Date.now();
      aDead = true;
      await Promise.all(exited);
      atKill = {
        broadcast: receivedOf("broadcast").length, transactional: receivedOf("transactional").length, scheduled: receivedOf("scheduled").length,
        status: (await b.api("GET", `/v1/broadcasts/${broadcastId}`, { key: KEY })).body.broadcast?.status,
      };
    };
    let next = 0;
    let inProgressRetries = 0;
    let killing: Promise<void> | undefined;
    const sender = async () => {
      for (;;) {
        const n = next++;
        if (n >= batches.length) return;
        if (n === 6) killing = killA();
        let res = await call(n % 2, "POST", "/v1/emails/batch", { emails: batches[n] });
        // Items whose first try died with set A answer 409 idempotency_request_in_progress until
        // A's claim lease runs out; then the same batch gets every item's original answer.
        for (let tries = 0; res.status === 200 && res.body.emails.failed.some((f: { code?: string }) => f.code === "idempotency_request_in_progress") && tries < 60; tries++) {
          inProgressRetries++;
          await sleep(500);
          res = await call(n % 2, "POST", "/v1/emails/batch", { emails: batches[n] });
        }
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
        expect(res.body.emails.failed).toEqual([]);
        await sleep(200);
      }
    };
    await Promise.all(Array.from({ length: 4 }, sender));
    await killing;
    const aOwners = ownersOf(a);

    // 5. What set A had in its hands, as the shared database says (its processes are gone).
    const heldDeliveries = await heldBy(aOwners.delivery);
    const heldEmails = (await db.query(
      `SELECT _id FROM mailroom_email.emails WHERE doc->>'dispatch' = 'claimed' AND doc->>'leaseOwner' LIKE $1`,
      [`email-%-${aOwners.email}-%`],
    )).rows.map((r) => r._id as string);
    const broadcastRow = (await db.query(`SELECT doc FROM mailroom_broadcast.broadcasts WHERE _id = $1`, [broadcastId])).rows[0]?.doc;
    const broadcastHeld = typeof broadcastRow?.leaseOwner === "string" && broadcastRow.leaseOwner.includes(`-${aOwners.broadcast}-`)
      && new Date(broadcastRow.leaseUntil?.$date ?? 0).getTime() > killedAt;

    // 6. Take-over: the first of each kind of A's leased items set B finishes.
    const takeover: { delivery?: number; email?: number; broadcast?: number } = {};
    const watchTakeover = async () => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
        if (heldDeliveries.length && takeover.delivery === undefined) {
          const done = await db.query(`SELECT min((doc->'at'->>'$date')::timestamptz) AS at FROM mailroom_delivery.delivery_outcomes WHERE _id = ANY($1)`, [heldDeliveries]);
          if (done.rows[0].at) takeover.delivery = new Date(done.rows[0].at).getTime() - killedAt;
        }
        if (heldEmails.length && takeover.email === undefined) {
          const done = await db.query(`SELECT min((doc->'publishedAt'->>'$date')::timestamptz) AS at FROM mailroom_email.emails WHERE _id = ANY($1) AND doc->>'dispatched' = 'published'`, [heldEmails]);
          if (done.rows[0].at) takeover.email = new Date(done.rows[0].at).getTime() - killedAt;
        }
        if (broadcastHeld && takeover.broadcast === undefined) {
          const row = (await db.query(`SELECT doc FROM mailroom_broadcast.broadcasts WHERE _id = $1`, [broadcastId])).rows[0]?.doc;
          if (row && (row.status === "COMPLETED" || (row.leaseOwner && !row.leaseOwner.includes(`-${aOwners.broadcast}-`)))) takeover.broadcast = Date.now() - killedAt;
        }
        if ((!heldDeliveries.length || takeover.delivery !== undefined) && (!heldEmails.length || takeover.email !== undefined) && (!broadcastHeld || takeover.broadcast !== undefined)) return;
      }
    };
    const watching = watchTakeover();

    // 7. Everything reaches the relay through set B, and the broadcast completes.
    const distinct = (k: string) => new Set(receivedOf(k).flatMap((m) => m.to));
    let progress: any;
    const deadline = Date.now() + 90_000;
    for (;; await sleep(250)) {
      progress = (await b.api("GET", `/v1/broadcasts/${broadcastId}`, { key: KEY })).body.broadcast;
      const done = progress?.status === "COMPLETED" && distinct("transactional").size === TRANSACTIONAL && distinct("scheduled").size === SCHEDULED;
      if (done || Date.now() > deadline) break;
    }
    await watching;
    await sleep(1_000); // stragglers: a duplicate still in flight is counted too
    clearInterval(sampler);
    const allDoneMs = Date.now() - killedAt;
    const counts = Object.fromEntries(["broadcast", "transactional", "scheduled"].map((k) => [k, { received: receivedOf(k).length, distinct: distinct(k).size }]));
    const duplicates = Object.values(counts).reduce((sum, c) => sum + c.received - c.distinct, 0);
    const beforeKill = sink.messages.filter((m) => m.receivedAt.getTime() <= killedAt);
    const duplicatesBeforeKill = beforeKill.length - new Set(beforeKill.flatMap((m) => m.to)).size;
    console.log(
      `test/cluster two sets: ${CONTACTS} contacts imported in ${importMs} ms; set A killed ${killedAt - broadcastStarted} ms into the broadcast ` +
        `(at the relay then: ${atKill.broadcast} broadcast, ${atKill.transactional} transactional, ${atKill.scheduled} scheduled; broadcast ${atKill.status}); ` +
        `A held ${heldDeliveries.length} delivery claims, ${heldEmails.length} email publish claims, broadcast lease ${broadcastHeld ? "yes" : "no"}; ` +
        `take-over after the kill: delivery ${takeover.delivery ?? "-"} ms, email ${takeover.email ?? "-"} ms, broadcast ${takeover.broadcast ?? "-"} ms (lease ${LEASE_MS} ms); ` +
        `${inProgressRetries} batch retries on 409 in progress; received ${JSON.stringify(counts)}; ${duplicates} duplicate(s) (bound ${DUPLICATE_BOUND}; ${duplicatesBeforeKill} of them before the kill); everything done ${allDoneMs} ms after the kill; ` +
        `broadcast ${progress?.status} ${JSON.stringify(progress?.progress)}; broadcast messages at the relay every 5 s: ${samples.join(" ")}`,
    );

    if (progress?.status !== "COMPLETED" || counts.transactional.distinct !== TRANSACTIONAL || counts.scheduled.distinct !== SCHEDULED) {
      const logs = await Promise.all((["email", "broadcast", "delivery"] as const).map(async (u) => `--- set B ${u} ---\n${await b.log(u, 30)}`));
      console.log(logs.join("\n"));
    }
    // The kill landed mid-send.
    expect(atKill.status).toBe("IN_PROGRESS");
    expect(atKill.broadcast).toBeLessThan(CONTACTS);
    // Everyone got theirs.
    expect(counts.transactional.distinct).toBe(TRANSACTIONAL);
    expect(counts.scheduled.distinct).toBe(SCHEDULED);
    expect(progress?.status).toBe("COMPLETED");
    expect(counts.broadcast.distinct).toBe(CONTACTS);
    expect(progress?.progress).toMatchObject({ recipients: CONTACTS, sent: CONTACTS, failed: 0 });
    expect(duplicates).toBeLessThanOrEqual(DUPLICATE_BOUND);
    // Set A had delivery claims open (the kill landed mid-send), and B took each kind over within the lease.
    expect(heldDeliveries.length).toBeGreaterThan(0);
    expect(takeover.delivery).toBeDefined();
    for (const ms of Object.values(takeover)) expect(ms).toBeLessThanOrEqual(LEASE_MS + TAKEOVER_MARGIN_MS);
    if (heldEmails.length) expect(takeover.email).toBeDefined();
    if (broadcastHeld) expect(takeover.broadcast).toBeDefined();
  }, 240_000);
});

/** The pids of a set's units, as their owner names in the shared store carry them. */
function ownersOf(sys: TestSystem): Record<"delivery" | "email" | "broadcast", number> {
  const pid = (name: string) => sys.processes.units.find((u) => u.name === name)!.child.pid!;
  return { delivery: pid("delivery"), email: pid("email"), broadcast: pid("broadcast") };
}
