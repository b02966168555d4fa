import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BroadcastService, BroadcastStatus, DeliveryMethod } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import type { UnitName } from "../../deploy/processes.js";
import type { TestSystem } from "../harness/system.js";
import { rawRequest } from "./openapi-model.js";
import { DOMAIN_B, KEY_A, LONG, WS_B, scale, sleep, startHostileSystem, until } from "./support.js";

/**
 * Faults below the API: a misbehaving SMTP relay, a full disk under the email store, and
 * kill -9 of every unit (and nats-server) in the middle of a broadcast and a stream of sends.
 * The invariants: nothing acknowledged is lost, nothing is reported sent that the relay did
 * not accept, and duplicates stay within what was in flight at each kill.
 */

const AUDIENCE = scale(500, 10_000);
/** Small delivery concurrency: it bounds what is in flight (and may be sent twice) at a kill. */
const TX_CONCURRENCY = 8;
const BROADCAST_CONCURRENCY = 4;

let sys: TestSystem;
let storeDir = "";
let tmpfs = false;
let tmpfsNote = "";

const send = (body: Record<string, unknown>) =>
  rawRequest(sys.gatewayUrl, "POST", "/v1/emails", { authorization: `Bearer ${KEY_A}`, "content-type": "application/json" }, Buffer.from(JSON.stringify(body)), 15_000);
const getEmail = (id: string) => rawRequest(sys.gatewayUrl, "GET", `/v1/emails/${id}`, { authorization: `Bearer ${KEY_A}` }, undefined, 15_000);
const mail = (to: string, subject: string, extra: Record<string, unknown> = {}) => ({ from: "team@acme.test", to, subject, html: `<p>${subject}</p>`, ...extra });

/** The client side of the idempotency contract: a failed or refused-for-now request is sent again with the same key. */
/** Why sends were retried: "<status> <code>" → count (the summary shows them). */
const retryReasons: Record<string, number> = {};
async function sendReliably(body: Record<string, unknown>, deadlineMs = 120_000): Promise<{ id: string; retries: number }> {
  const deadline = Date.now() + deadlineMs;
  let retries = 0;
  for (;;) {
    const res = await send(body).catch((err: Error) => ({ status: 0, text: err.message, json: undefined as any }));
    if (res.status === 200) return { id: res.json.email.id, retries };
    const transient = res.status === 0 || res.status >= 500 || res.status === 429 || res.json?.code === "idempotency_request_in_progress";
    const reason = `${res.status} ${res.json?.code ?? (res.status ? "" : "no answer")}`.trim();
    retryReasons[reason] = (retryReasons[reason] ?? 0) + 1;
    if (!transient || Date.now() > deadline) throw new Error(`send ${JSON.stringify(body).slice(0, 120)}: ${res.status} ${res.text.slice(0, 200)}`);
    retries++;
    await sleep(250);
  }
}

async function statusOf(id: string): Promise<string | undefined> {
  const res = await getEmail(id).catch(() => undefined);
  return res?.status === 200 ? res.json.email.status : undefined;
}

/** Every event in MAIL_EVENTS of the transactional source, read from the stream's start. */
async function transactionalEvents() {
  const nc = await connectNats(sys.nats.url, "hostile-events");
  try {
    const consumer = await jetstream(nc).consumers.get(EVENTS_STREAM, { filter_subjects: "mail.events.transactional.>" });
    const events = [];
    for (;;) {
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: 1_000, expires: 1_000 })) {
        got++;
        events.push(fromBinary(MailEventSchema, m.data));
      }
      if (!got) break;
    }
    return events;
  } finally {
    await nc.close();
  }
}

const messagesMarked = (marker: string) => sys.sink!.messages.filter((m) => m.raw.includes(marker));

describe("faults", () => {
  beforeAll(async () => {
    sys = await startHostileSystem({
      audience: AUDIENCE,
      env: {
        MAILROOM_DELIVERY_CONCURRENCY: String(TX_CONCURRENCY),
        MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: String(BROADCAST_CONCURRENCY),
        // Jobs a killed delivery process held come back after the ack wait: seconds, not the default minute.
        MAILROOM_DELIVERY_ACK_WAIT_MS: "5000",
      },
      // The email service's store on its own small tmpfs, so its disk can be filled.
      async prepareDataDir(dataDir) {
        storeDir = path.join(dataDir, "email");
        mkdirSync(storeDir, { recursive: true });
        try {
          execFileSync("mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", storeDir], { stdio: "pipe" });
          tmpfs = true;
        } catch (err) {
          tmpfsNote = `tmpfs mount not permitted here (${String((err as Error).message).split("\n")[0]})`;
        }
      },
    });
  }, 180_000);
  afterAll(async () => {
    await sys?.processes.stop();
    if (tmpfs) execFileSync("umount", ["-l", storeDir]);
    await sys?.stop();
  });

  it("retries deferred mail, bounces and suppresses permanent failures, and reports sent only what the relay accepted", async (ctx) => {
    const sink = sys.sink!;
    // 1. The relay answers 451 for a while.
    sink.setBehaviour(() => ({ kind: "reject", code: 451, message: "4.3.0 try again later" }));
    const deferred = await Promise.all(Array.from({ length: 10 }, (_, i) => sendReliably(mail(`defer${i}@smtp.test`, "smtp-fault #deferred"))));
    await until("deferred attempts", async () => sink.attempts >= 10, 20_000);
    // 2. It cuts connections: mid-DATA, then after DATA but before its reply.
    let cuts = 4;
    let drops = 4;
    sink.setMidDataCut(() => cuts-- > 0);
    sink.setBehaviour(() => (drops-- > 0 ? { kind: "drop" } : { kind: "accept" }));
    const cut = await Promise.all(Array.from({ length: 10 }, (_, i) => sendReliably(mail(`cut${i}@smtp.test`, "smtp-fault #cut"))));
    // 3. It refuses chosen recipients for good.
    sink.setRecipientFault((rcpt) => (rcpt.startsWith("bounce") ? { code: 550, message: "5.1.1 no such user" } : undefined));
    const bounced = await Promise.all(Array.from({ length: 3 }, (_, i) => sendReliably(mail(`bounce${i}@smtp.test`, "smtp-fault #bounce"))));

    const good = [...deferred, ...cut].map((s) => s.id);
    await until("every good email DELIVERED and every bounce FAILED", async () => {
      const statuses = await Promise.all([...good, ...bounced.map((b) => b.id)].map(statusOf));
      return statuses.slice(0, good.length).every((s) => s === "DELIVERED") && statuses.slice(good.length).every((s) => s === "FAILED");
    }, 60_000, 500).catch(async (err) => { throw new Error(`${err.message}\n${await sys.log("delivery", 30)}`); });

    const accepted = messagesMarked("smtp-fault #");
    const recipients = accepted.flatMap((m) => m.to);
    expect(new Set(recipients).size, "one message per good recipient").toBe(recipients.length);
    expect(recipients.filter((r) => r.startsWith("bounce"))).toEqual([]);
    const events = await transactionalEvents();
    const goodIds = new Set(good);
    const sentEvents = events.filter((e) => e.type === MailEventType.SENT && goodIds.has(e.emailId));
    const bouncedIds = new Set(bounced.map((b) => b.id));
    const bounceEvents = events.filter((e) => bouncedIds.has(e.emailId));
    // Accepted by the sink == SENT events == DELIVERED records.
    expect(accepted.length).toBe(20);
    expect(new Set(sentEvents.map((e) => e.emailId)).size).toBe(20);
    expect(sentEvents.length).toBe(20);
    expect(bounceEvents.some((e) => e.type === MailEventType.SENT)).toBe(false);
    expect(bounceEvents.filter((e) => e.type === MailEventType.BOUNCED || e.type === MailEventType.FAILED).length).toBeGreaterThanOrEqual(3);
    // The bounced address is now suppressed: a new send is refused or recorded FAILED, and never reaches the relay.
    sink.setRecipientFault(undefined);
    const again = await send(mail("bounce0@smtp.test", "smtp-fault #again"));
    const suppressed = again.status === 400 ? again.json.code === "recipient_suppressed" : again.status === 200 && again.json.email.status === "FAILED";
    expect(suppressed, `${again.status} ${again.text}`).toBe(true);
    await sleep(1_000);
    expect(messagesMarked("smtp-fault #again")).toEqual([]);
    sink.setMidDataCut(undefined);
    sink.setBehaviour(() => ({ kind: "accept" }));
    ctx.task.meta.hostile = [
      ["smtp: deferred (451) then delivered", deferred.length],
      ["smtp: connections cut mid-DATA / after DATA", `${sink.cuts} / 4`],
      ["smtp: 550 recipients bounced and suppressed", bounced.length],
      ["smtp: sink-accepted = SENT events = DELIVERED records", `${accepted.length} = ${sentEvents.length} = ${good.length}`],
    ];
  }, 120_000);

  it("answers 503 while the email store's disk is full, loses nothing acknowledged, and recovers by itself", async (ctx) => {
    if (!tmpfs) {
      ctx.task.meta.hostile = [["store faults", `skipped: ${tmpfsNote}`]];
      ctx.skip();
    }
    const filler = path.join(storeDir, "filler");
    const fill = () => {
      const fd = openSync(filler, "a");
      const chunk = Buffer.alloc(1 << 20, 1);
      try { for (;;) writeSync(fd, chunk); } catch { /* ENOSPC: the disk is full */ } finally { closeSync(fd); }
    };
    fill();
    const statuses: Record<number, number> = {};
    const acknowledged: string[] = [];
    const badBodies: string[] = [];
    let i = 0;
    // The store fills free pages it already holds first: tens of sends may pass before one needs new space.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !statuses[503]) {
      const to = `disk${i++}@store.test`;
      const res = await send(mail(to, "store-fault #full")).catch((err: Error) => ({ status: 0, text: err.message, json: undefined as any }));
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 200) acknowledged.push(to);
      else if (res.status !== 503 || res.json?.code !== "service_unavailable") badBodies.push(`${res.status} ${res.text.slice(0, 200)}`);
      if (i % 20 === 0) fill(); // what the store freed or grew into is taken again
    }
    const emailAlive = sys.processes.units.find((u) => u.name === "email")!.child.exitCode === null;
    unlinkSync(filler);
    // Recovery without a restart: sends are accepted again once there is space.
    const recovered = await until("a send to be accepted again", async () => {
      const res = await send(mail(`after${Date.now()}@store.test`, "store-fault #after")).catch(() => undefined);
      return res?.status === 200 ? res : undefined;
    }, 30_000, 500).then(() => true, () => false);
    await until("every acknowledged send to reach the relay", async () => {
      const got = new Set(messagesMarked("store-fault #full").flatMap((m) => m.to));
      return acknowledged.every((a) => got.has(a));
    }, 60_000, 500).catch(() => undefined);
    const got = new Set(messagesMarked("store-fault #full").flatMap((m) => m.to));
    const lost = acknowledged.filter((a) => !got.has(a));
    ctx.task.meta.hostile = [
      ["store: statuses while the disk was full", JSON.stringify(statuses)],
      ["store: email process survived the full disk", String(emailAlive)],
      ["store: recovered by itself", String(recovered)],
      ["store: acknowledged / lost", `${acknowledged.length} / ${lost.length}`],
    ];
    expect(badBodies.slice(0, 5)).toEqual([]);
    expect(statuses[503] ?? 0, "a full disk must show as 503 service_unavailable").toBeGreaterThan(0);
    expect(emailAlive).toBe(true);
    expect(recovered).toBe(true);
    expect(lost).toEqual([]);
  }, LONG ? 600_000 : 240_000);

  it(`loses nothing when every unit and nats-server are killed (-9) during a ${AUDIENCE}-recipient broadcast and a stream of sends`, async (ctx) => {
    const sink = sys.sink!;
    // The email service may have died in the store test; this test needs it whole.
    if (sys.processes.units.find((u) => u.name === "email")!.child.exitCode !== null) await sys.processes.restart("email");
    // A relay slow enough that the broadcast is still sending through every kill.
    const targetSeconds = scale(12, 150);
    const delayMs = Math.max(5, Math.floor((BROADCAST_CONCURRENCY * targetSeconds * 1000) / AUDIENCE));
    sink.setBehaviour(() => ({ kind: "accept", delayMs }));
    const broadcasts = connectClient(BroadcastService, `http://127.0.0.1:${sys.ports.broadcast}`);
    const retrying = async <T>(fn: () => Promise<T>): Promise<T> => {
      for (let i = 0; ; i++) {
        try { return await fn(); } catch (err) { if (i > 240) throw err; await sleep(500); }
      }
    };
    // The public /v1/broadcasts routes are not on this branch: the broadcast is driven over its Connect API.
    const { broadcast } = await retrying(() => broadcasts.createBroadcast({
      workspaceId: WS_B, name: "hostile", subject: "Kill test {{firstName}} #procfault", fromEmail: `news@${DOMAIN_B}`, fromName: "News",
      html: "<html><body><p>Hi {{firstName}}</p></body></html>", audience: { all: true },
    }));
    await broadcasts.scheduleBroadcast({ workspaceId: WS_B, id: broadcast!.id, deliveryMethod: DeliveryMethod.ASAP, sendAt: timestampNow() });

    // A stream of transactional sends, each retried with its idempotencyKey through the kills.
    let sending = true;
    const sent: Array<{ to: string; id: string }> = [];
    let txRetries = 0;
    let next = 0;
    const stream = Promise.all(Array.from({ length: 4 }, async () => {
      while (sending) {
        const n = next++;
        const to = `tx${n}@proc.test`;
        const r = await sendReliably(mail(to, "proc-fault #tx", { idempotencyKey: `proc-${n}` }), 180_000);
        txRetries += r.retries;
        sent.push({ to, id: r.id });
        await sleep(50);
      }
    }));

    const kills: Array<{ what: string; at: number; sinkBefore: number; restartMs: number }> = [];
    await sleep(2_000);
    // Short form: the broadcast's own path and the client's; the long form kills every unit.
    const victims: UnitName[] = scale(["broadcast", "delivery", "gateway"], ["email", "broadcast", "delivery", "accounts", "audience", "gateway"]);
    for (const unit of victims) {
      const t0 = Date.now();
      const sinkBefore = sink.messages.length;
      await sys.processes.kill(unit, "SIGKILL");
      await sys.processes.restart(unit);
      kills.push({ what: unit, at: t0, sinkBefore, restartMs: Date.now() - t0 });
      await sleep(1_000);
    }
    {
      const t0 = Date.now();
      const sinkBefore = sink.messages.length;
      await sys.nats.kill(true);
      await sleep(500);
      await sys.nats.restart();
      kills.push({ what: "nats-server", at: t0, sinkBefore, restartMs: Date.now() - t0 });
    }
    await sleep(2_000);
    sending = false;
    await stream;
    const killsDoneAt = Date.now();
    sink.setBehaviour(() => ({ kind: "accept" }));

    const final = await until("the broadcast to complete", async () => {
      const b = (await broadcasts.getBroadcast({ workspaceId: WS_B, id: broadcast!.id }).catch(() => undefined))?.broadcast;
      return b && b.status === BroadcastStatus.COMPLETED ? b : undefined;
    }, LONG ? 1_200_000 : 180_000, 1_000).catch(async (err) => {
      const b = (await broadcasts.getBroadcast({ workspaceId: WS_B, id: broadcast!.id }).catch(() => undefined))?.broadcast;
      throw new Error(`${err.message}: ${b && BroadcastStatus[b.status]} ${JSON.stringify(b?.progress, (_k, v) => (typeof v === "bigint" ? Number(v) : v))}\n${await sys.log("broadcast", 30)}\n${await sys.log("delivery", 30)}`);
    });
    const completedAfterMs = Date.now() - killsDoneAt;
    await until("every transactional send to reach the relay", async () => {
      const got = new Set(messagesMarked("proc-fault #tx").flatMap((m) => m.to));
      return sent.every((s) => got.has(s.to));
    }, 120_000, 500).catch(() => undefined);
    await sleep(2_000);

    const countBy = (marker: string) => {
      const counts = new Map<string, number>();
      for (const m of messagesMarked(marker)) for (const to of m.to) counts.set(to, (counts.get(to) ?? 0) + 1);
      return counts;
    };
    const bc = countBy("#procfault");
    const tx = countBy("proc-fault #tx");
    const audience = Array.from({ length: AUDIENCE }, (_, i) => `r${i}@audience.test`);
    const lostBroadcast = audience.filter((a) => !bc.has(a));
    const lostTx = sent.filter((s) => !tx.has(s.to)).map((s) => s.to);
    const dupBroadcast = [...bc.values()].reduce((n, c) => n + c - 1, 0);
    const dupTx = [...tx.values()].reduce((n, c) => n + c - 1, 0);
    // Records and counters settle from events after the relay took the mail: wait for them
    // (bounded) rather than read once, so a slow runner is not a failure; a wrong figure still is.
    const readTxStatuses = async () => {
      const counts: Record<string, number> = {};
      for (const s of sent.slice(0, 300)) {
        const st = (await statusOf(s.id)) ?? "unreadable";
        counts[st] = (counts[st] ?? 0) + 1;
      }
      return counts;
    };
    let txStatuses = await readTxStatuses();
    await until("the transactional records to settle", async () => Object.keys((txStatuses = await readTxStatuses())).every((s) => s === "DELIVERED"), 60_000, 1_000).catch(() => undefined);
    const readProgress = async () => (await retrying(() => broadcasts.getBroadcast({ workspaceId: WS_B, id: broadcast!.id }))).broadcast!.progress!;
    let progress = await readProgress();
    await until("the broadcast's counters to settle", async () => {
      progress = await readProgress();
      return Number(progress.sent) === bc.size && Number(progress.sent + progress.failed + progress.bounced + progress.suppressed) === AUDIENCE;
    }, 60_000, 1_000).catch(() => undefined);
    const progressAtCompletion = final.progress!;
    // In flight at a kill of delivery or nats-server: at most each lane's concurrency (a message the relay took whose ack died with the process).
    const inFlightBound = kills.filter((k) => k.what === "delivery" || k.what === "nats-server").length * (TX_CONCURRENCY + BROADCAST_CONCURRENCY);
    ctx.task.meta.hostile = [
      ["kills survived", kills.map((k) => `${k.what} (${k.restartMs} ms)`).join(", ")],
      ["broadcast completed after the last kill (ms)", completedAfterMs],
      ["relay delay per message (ms)", delayMs],
      ["broadcast recipients / unique delivered / lost / duplicates", `${AUDIENCE} / ${bc.size} / ${lostBroadcast.length} / ${dupBroadcast}`],
      ["broadcast progress recipients / sent / failed / bounced / suppressed", `${progress.recipients} / ${progress.sent} / ${progress.failed} / ${progress.bounced} / ${progress.suppressed} (sent ${progressAtCompletion.sent} at COMPLETED)`],
      ["transactional acknowledged / lost / duplicates / client retries", `${sent.length} / ${lostTx.length} / ${dupTx} / ${txRetries}`],
      ["transactional record statuses (first 300)", JSON.stringify(txStatuses)],
      ["client retries by answer (whole file)", JSON.stringify(retryReasons)],
      ["duplicates bound (in flight at delivery/nats kills)", inFlightBound],
      ["messages lost (must be 0)", lostBroadcast.length + lostTx.length],
    ];
    expect(lostBroadcast.slice(0, 10)).toEqual([]);
    expect(lostTx.slice(0, 10)).toEqual([]);
    expect(Number(progress.recipients)).toBe(AUDIENCE);
    expect(Number(progress.sent), "the broadcast's sent counter matches the relay's unique recipients").toBe(bc.size);
    // Exactly one final outcome per recipient.
    expect(Number(progress.sent + progress.failed + progress.bounced + progress.suppressed)).toBe(AUDIENCE);
    expect(dupBroadcast + dupTx).toBeLessThanOrEqual(inFlightBound);
    expect(Object.keys(txStatuses).filter((s) => s !== "DELIVERED")).toEqual([]);
  }, LONG ? 3_600_000 : 420_000);
});
