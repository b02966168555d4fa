import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openStore } from "@mailroom/store/open.js";
import { buildTestWorld, draft, FakeDirectory, ManualClock, type TestWorld } from "../testing.js";
import { deliveryIdOf } from "./model.js";

const WS = "ws_acme";
const MIN = 60_000;

/** Ticks the sender until it has nothing left to do now. */
async function run(w: TestWorld, sender = w.sender()) {
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

async function scheduled(w: TestWorld, method?: string, sendAt?: Date) {
  const { broadcast } = await w.service.create(WS, draft());
  await w.service.schedule(WS, broadcast.id, { deliveryMethod: method, sendAt });
  return broadcast.id;
}

const status = async (w: TestWorld, id: string) => (await w.service.get(WS, id)).status;

describe("start and audience", () => {
  it("ASAP: one job per subscribed contact minus suppressions as of the start, then COMPLETED once all are final", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(2_300);
    w.directory.contacts[5].subscribed = false;
    w.directory.suppressions.add("c7@example.test");
    const id = await scheduled(w, "ASAP");
    // Between schedule and start: an unsubscribe and a new suppression are honoured.
    w.directory.contacts[9].subscribed = false;
    w.directory.suppressions.add("c11@example.test");
    await run(w);

    const b = await w.service.get(WS, id);
    expect(b.status).toBe("IN_PROGRESS");
    expect(b.sentAt).toEqual(w.clock.now());
    const delivered = w.queue.distinct();
    expect(delivered.size).toBe(2_296);
    for (const i of [5, 7, 9, 11]) expect(delivered.has(deliveryIdOf(id, w.directory.contacts[i].id))).toBe(false);
    const job = w.queue.jobs.find((j) => j.recipient.email === "c0@example.test")!;
    expect(job).toMatchObject({
      deliveryId: deliveryIdOf(id, w.directory.contacts[0].id),
      contentRef: `broadcast:${id}`,
      test: false,
      subjectPrefix: "",
      recipient: { contactId: w.directory.contacts[0].id, variables: { firstName: "First0", plan: "pro" } },
    });
    expect(b.progress).toMatchObject({ recipients: 2_296, released: 2_296 });
    expect(w.directory.used).toBe(2_296);

    await w.settleAll(id, "sent");
    expect(await status(w, id)).toBe("COMPLETED");
    expect((await w.service.get(WS, id)).progress).toMatchObject({ sent: 2_296, delivered: 2_296, finalized: 2_296 });
    // The recipient pages go with completion; the ledger stays for late opens and clicks.
    expect(await w.store.collection("broadcast_pages").countDocuments({ broadcastId: id })).toBe(0);
    expect(await w.repos.ledger.countFinal(id)).toBe(2_296);
  });

  it("completes an empty audience at once", async () => {
    const w = await buildTestWorld();
    const id = await scheduled(w, "ASAP");
    await run(w);
    expect(await status(w, id)).toBe("COMPLETED");
  });

  it("waits for sendAt, and a cancel that won the race lets nothing out", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(10);
    const id = await scheduled(w, "ASAP", new Date(w.clock.now().getTime() + 10 * MIN));
    await run(w);
    expect(await status(w, id)).toBe("SCHEDULED");
    await w.service.cancel(WS, id);
    w.clock.advance(11 * MIN);
    await run(w);
    expect(await status(w, id)).toBe("DRAFT");
    expect(w.queue.jobs).toHaveLength(0);
  });

  it("refuses to cancel once the start claim won", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await w.sender().tick();
    await expect(w.service.cancel(WS, id)).rejects.toMatchObject({ code: "broadcast_not_cancellable" });
  });

  it("resumes resolution from the persisted cursor after a crash, without losing or repeating anyone", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "broadcast-resume-"));
    try {
      const clock = new ManualClock();
      const directory = new FakeDirectory();
      directory.addContacts(3_500);
      const first = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory, sender: { pagesPerClaim: 1 } });
      const id = await scheduled(first, "ASAP");
      directory.streamFailsAt = 2_200; // dies while resolving the third page
      for (let i = 0; i < 5; i++) await first.sender().tick();
      expect((await first.service.get(WS, id)).sending).toMatchObject({ phase: "resolving", pages: 2, cursor: directory.contacts[1_999].id });
      await first.store.close();

      directory.streamFailsAt = undefined;
      clock.advance(2 * MIN); // the dead process's lease ran out
      const second = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
      await run(second, second.sender("restarted"));
      expect(directory.calls).toContain(`stream after ${directory.contacts[1_999].id}`);
      const b = await second.service.get(WS, id);
      expect(b.progress.recipients).toBe(3_500);
      expect(second.queue.distinct().size).toBe(3_500);
      await second.store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("shares the work of several broadcasts between processes on one store, each recipient counted once", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 100, maxPerClaim: 300 } });
    w.directory.addContacts(1_000);
    const ids = [await scheduled(w, "ASAP"), await scheduled(w, "ASAP"), await scheduled(w, "ASAP")];
    const a = w.sender("process-a");
    const b = w.sender("process-b");
    for (let i = 0; i < 50; i++) {
      const [na, nb] = await Promise.all([a.tick(), b.tick()]);
      if (na + nb === 0) break;
    }
    for (const id of ids) {
      expect(w.queue.distinct((j) => j.broadcastId === id).size).toBe(1_000);
      expect((await w.service.get(WS, id)).progress).toMatchObject({ recipients: 1_000, released: 1_000 });
    }
    expect(w.directory.used).toBe(3_000);
  });

  it("publishes a window reserved by a process that died again, without a second reservation", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 100 } });
    w.directory.addContacts(250);
    const id = await scheduled(w, "ASAP");
    w.queue.failNext = 1; // the first publish of the first window fails mid-way
    await w.sender().tick();
    const reservations = w.directory.calls.filter((c) => c.startsWith("reserve")).length;
    w.clock.advance(3_000);
    await run(w);
    expect(w.directory.calls.filter((c) => c.startsWith("reserve")).length).toBe(reservations + 2);
    expect(w.queue.distinct().size).toBe(250);
    expect(w.directory.used).toBe(250);
    expect((await w.service.get(WS, id)).progress.released).toBe(250);
  });

  it("settles recipients suppressed after resolution without sending, and fails a window over the monthly limit", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 250 } });
    w.directory.addContacts(1_500);
    const id = await scheduled(w, "PROGRESSIVE");
    await run(w); // wave 0: 1000
    // Before wave 1: c1200 bounces elsewhere, and other sends leave room for only 349 more.
    w.directory.suppressions.add("c1200@example.test");
    w.directory.limit = w.directory.used + 349;
    w.clock.advance(10 * MIN);
    await run(w);
    const b = await w.service.get(WS, id);
    expect(w.queue.distinct().size).toBe(1_249);
    expect(w.queue.jobs.some((j) => j.recipient.email === "c1200@example.test")).toBe(false);
    expect(b.progress).toMatchObject({ recipients: 1_500, released: 1_500, suppressed: 1, failed: 250, finalized: 251 });
    await w.settleAll(id, "sent");
    expect(await status(w, id)).toBe("COMPLETED");
  });
});

describe("outcomes", () => {
  it("counts each (delivery, kind) once, opens and clicks as unique, and ignores test messages", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    const [a, b, c] = w.directory.contacts.map((x) => x.id);
    const job = (contactId: string) => w.queue.jobs.find((j) => j.recipient.contactId === contactId)!;
    const ev = (kind: any, contactId: string, tracking = false) =>
      w.event({ kind, broadcastId: id, deliveryId: tracking ? "" : deliveryIdOf(id, contactId), contactId, messageId: job(contactId).messageId });
    expect(await ev("deferred", a)).toBe(true);
    expect(await ev("deferred", a)).toBe(false);
    expect(await ev("sent", a)).toBe(true);
    expect(await ev("sent", a)).toBe(false);
    expect(await ev("opened", a, true)).toBe(true);
    expect(await ev("opened", a, true)).toBe(false);
    expect(await ev("clicked", a, true)).toBe(true);
    expect(await w.event({ kind: "opened", broadcastId: id, contactId: b, messageId: "random@acme.test" })).toBe(false);
    expect(await ev("sent", b)).toBe(true);
    expect(await ev("bounced", b)).toBe(true); // asynchronous bounce after acceptance
    expect(await ev("unsubscribed", b, true)).toBe(true);
    expect(await status(w, id)).toBe("IN_PROGRESS");
    expect(await ev("failed", c)).toBe(true);
    const after = await w.service.get(WS, id);
    expect(after.status).toBe("COMPLETED");
    expect(after.progress).toMatchObject({ recipients: 3, released: 3, sent: 2, delivered: 1, deferred: 1, bounced: 1, failed: 1, opened: 1, clicked: 1, unsubscribed: 1, finalized: 3 });
  });

  it("counts replies once per recipient (DESIGN §10.4), however many the recipient sends, through the consumer's table", async () => {
    const { broadcastEventOf } = await import("../consumers.js");
    const { create } = await import("@bufbuild/protobuf");
    const { MailEventSchema, MailEventType, DeliverySource } = await import("@mailroom/proto/events/v1/events_pb.js");
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    const [a, b, c] = w.directory.contacts.map((x) => x.id);
    const messageId = (contactId: string) => w.queue.jobs.find((j) => j.recipient.contactId === contactId)!.messageId;
    const reply = (contactId: string, rcv: string) =>
      broadcastEventOf(create(MailEventSchema, {
        eventId: `replied-${rcv}`, type: MailEventType.REPLIED, workspaceId: WS, source: DeliverySource.BROADCAST,
        broadcastId: id, contactId, messageId: messageId(contactId), detail: rcv,
      }))!;
    expect(reply(a!, "rcv_1")).toMatchObject({ kind: "replied", broadcastId: id, contactId: a });
    expect(await w.event(reply(a!, "rcv_1"))).toBe(true);
    expect(await w.event(reply(a!, "rcv_2"))).toBe(false);
    expect(await w.event(reply(b!, "rcv_3"))).toBe(true);
    // A reply to another message (a test send's id) is not this broadcast's.
    expect(await w.event({ ...reply(c!, "rcv_4"), messageId: "other@acme.test" })).toBe(false);
    const after = await w.service.get(WS, id);
    expect(after.progress).toMatchObject({ replied: 2, sent: 0, finalized: 0 });
    expect(after.status).toBe("IN_PROGRESS");
  });

  it("counts tracking from tokens that carry no Message-ID (test sends' come on another subject)", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1);
    const id = await scheduled(w, "ASAP");
    await run(w);
    const [a] = w.directory.contacts.map((x) => x.id);
    expect(await w.event({ kind: "opened", broadcastId: id, deliveryId: "", contactId: a, messageId: "" })).toBe(true);
    expect(await w.event({ kind: "opened", broadcastId: id, deliveryId: "", contactId: a, messageId: "" })).toBe(false);
    expect((await w.service.get(WS, id)).progress).toMatchObject({ opened: 1 });
  });

  it("completes through the sender's exact count when a counter update was lost", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(2);
    const id = await scheduled(w, "ASAP");
    await run(w);
    for (const j of w.queue.jobs) await w.repos.ledger.mark(j.deliveryId, "sent"); // counted, then the process died
    expect(await status(w, id)).toBe("IN_PROGRESS");
    // A drain check that finds the counter where the last one left it counts the ledger.
    for (let check = 0; check < 2; check++) {
      w.clock.advance(6_000);
      await run(w);
    }
    expect(await status(w, id)).toBe("COMPLETED");
    // …and the counters are the ledger's exact tally, not the ones the crash left.
    expect((await w.service.get("ws_acme", id)).progress).toMatchObject({ sent: 2, delivered: 2, finalized: 2, recipients: 2 });
  });
});

describe("drain checks", () => {
  it("count the ledger only when the finalized counter has stalled since the last check", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    let scans = 0;
    const countFinal = w.repos.ledger.countFinal.bind(w.repos.ledger);
    w.repos.ledger.countFinal = (broadcastId: string) => ((scans += 1), countFinal(broadcastId));
    // Outcomes keep arriving: every check sees the counter moved, and none scans.
    for (let i = 0; i < 2; i++) {
      await w.repos.broadcasts.increment(id, { sent: 1, delivered: 1, finalized: 1 });
      w.clock.advance(6_000);
      await run(w);
    }
    expect(scans).toBe(0);
    // Stalled: the next check counts the ledger (one recipient still has no final outcome).
    w.clock.advance(6_000);
    await run(w);
    expect(scans).toBe(1);
    expect(await status(w, id)).toBe("IN_PROGRESS");
  });
});

describe("outcomes after a crash", () => {
  it("makes the counters exact from the ledger at completion when a counter update was lost", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    for (const j of w.queue.jobs) await w.repos.ledger.mark(j.deliveryId, "sent"); // counted, then the process died
    for (let check = 0; check < 2; check++) {
      w.clock.advance(6_000);
      await run(w);
    }
    expect(await status(w, id)).toBe("COMPLETED");
    expect((await w.service.get(WS, id)).progress).toMatchObject({ recipients: 3, sent: 3, delivered: 3, finalized: 3 });
  });
});

describe("pacing in the release loop", () => {
  it("PROGRESSIVE releases 1k, then 2k after 10 minutes, and pauses on a bouncing wave", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(5_000);
    const id = await scheduled(w, "PROGRESSIVE");
    await run(w);
    expect(w.queue.distinct().size).toBe(1_000);
    w.clock.advance(10 * MIN - 1);
    await run(w);
    expect(w.queue.distinct().size).toBe(1_000);
    w.clock.advance(1);
    await run(w);
    expect(w.queue.distinct().size).toBe(3_000);
    // Wave 1 (2k) bounces 101 times: past 5 %, nothing more goes out.
    const wave1 = w.queue.jobs.slice(1_000, 1_101);
    for (const j of wave1) await w.event({ kind: "bounced", broadcastId: id, deliveryId: j.deliveryId });
    w.clock.advance(10 * MIN);
    await run(w);
    expect(w.queue.distinct().size).toBe(3_000);
    expect((await w.service.get(WS, id)).sending?.pauseReason).toBe("bounce_rate");
    // Stopped early: once what was released has settled it COMPLETES; the rest never goes.
    await w.settleAll(id, "sent");
    const done = await w.service.get(WS, id);
    expect(done).toMatchObject({ status: "COMPLETED", sending: { pauseReason: "bounce_rate" } });
    expect(done.progress).toMatchObject({ recipients: 5_000, released: 3_000, bounced: 101 });
    w.clock.advance(60 * MIN);
    await run(w);
    expect(w.queue.distinct().size).toBe(3_000);
  });

  it("keeps PROGRESSIVE pacing across a restart of the process (state in the store)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "broadcast-pacing-"));
    try {
      const clock = new ManualClock();
      const directory = new FakeDirectory();
      directory.addContacts(4_000);
      const before = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
      const id = await scheduled(before, "PROGRESSIVE");
      await run(before);
      expect(before.queue.distinct().size).toBe(1_000);
      await before.store.close();

      clock.advance(10 * MIN);
      const after = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
      await run(after, after.sender("restarted"));
      // Wave 1 (2k) only: the start time and what was released came from the store.
      expect(after.queue.distinct().size).toBe(2_000);
      expect((await after.service.get(WS, id)).progress.released).toBe(3_000);
      await after.store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("WARMUP caps a new account at 1k a day, shared across broadcasts, the rest the next day", async () => {
    const w = await buildTestWorld();
    w.directory.setWorkspace(WS, { sendingAccountNew: true });
    w.directory.addContacts(1_800);
    const first = await scheduled(w);
    const second = await scheduled(w);
    await run(w);
    expect(w.queue.jobs.length).toBe(1_000);
    w.clock.advance(12 * 3600_000); // next UTC day (clock starts at 12:00Z)
    await run(w);
    expect(w.queue.jobs.length).toBe(2_500);
    w.clock.advance(24 * 3600_000);
    await run(w);
    expect(w.queue.distinct((j) => j.broadcastId === first).size).toBe(1_800);
    expect(w.queue.distinct((j) => j.broadcastId === second).size).toBe(1_800);
  });

  it("SMART releases each contact at the sendAt wall-clock time of its own timezone", async () => {
    const clock = new ManualClock(Date.parse("2030-01-15T07:00:00Z"));
    const w = await buildTestWorld({ clock });
    w.directory.setWorkspace(WS, { timezone: "Europe/Paris" });
    const zones = ["", "Europe/Paris", "America/New_York", "Asia/Tokyo"];
    w.directory.addContacts(4, (i) => ({ timezone: zones[i] }));
    const id = await scheduled(w, "SMART", new Date("2030-01-15T08:00:00Z"));
    const released = () => w.queue.jobs.map((j) => j.recipient.email).sort();
    await run(w);
    expect(released()).toEqual([]);
    clock.set("2030-01-15T08:00:00Z");
    await run(w);
    expect(released()).toEqual(["c0@example.test", "c1@example.test"]);
    clock.set("2030-01-15T14:00:00Z");
    await run(w);
    expect(released()).toEqual(["c0@example.test", "c1@example.test", "c2@example.test"]);
    clock.set("2030-01-16T00:00:00Z");
    await run(w);
    expect(released()).toHaveLength(4);
    await w.settleAll(id);
    expect(await status(w, id)).toBe("COMPLETED");
  });
});

describe("BROADCAST_STARTED / BROADCAST_COMPLETED", () => {
  it("publishes STARTED once the status is IN_PROGRESS and COMPLETED once, after the CAS, with the counters", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    expect(w.events.published.map((e) => e.type)).toEqual(["started"]);
    expect(w.events.published[0].broadcast).toMatchObject({ id, workspaceId: WS, status: "IN_PROGRESS", sentAt: w.clock.now() });

    await w.settleAll(id, "sent");
    await w.settleAll(id, "sent"); // redelivered outcomes: the CAS is lost, nothing more published
    await run(w);
    expect(w.events.published.map((e) => e.type)).toEqual(["started", "completed"]);
    expect(w.events.published[1].broadcast).toMatchObject({ id, status: "COMPLETED", progress: { recipients: 3, released: 3, sent: 3, delivered: 3 } });
  });

  it("a failed STARTED publish fails the first step, which is retried: nothing is released before it went out", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    w.events.failures = 1;
    await w.sender().tick();
    expect(w.events.published).toEqual([]);
    expect(w.queue.distinct().size).toBe(0);
    expect(await status(w, id)).toBe("IN_PROGRESS");
    w.clock.advance(3_000);
    await run(w);
    expect(w.events.published.map((e) => e.type)).toEqual(["started"]);
    expect(w.queue.distinct().size).toBe(3);
  });

  it("a process stopped after the start claim: the next one publishes STARTED, once", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    expect(await w.sender("dies").startDue()).toBe(1); // IN_PROGRESS committed, then the process is gone
    expect(await status(w, id)).toBe("IN_PROGRESS");
    expect(w.events.published).toEqual([]);
    await run(w, w.sender("restarted"));
    await run(w, w.sender("another"));
    expect(w.events.published.map((e) => [e.type, e.broadcast.id])).toEqual([["started", id]]);
  });

  it("a process stopped between the COMPLETED CAS and the publish: after a restart the sweep publishes COMPLETED, once", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "mr-bc-announce-"));
    try {
      const clock = new ManualClock();
      const directory = new FakeDirectory();
      directory.addContacts(3);
      const first = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
      const id = await scheduled(first, "ASAP");
      await run(first);
      first.events.failures = 1; // the COMPLETED publish does not go out (NATS gone, or the process stops here)
      await first.settleAll(id, "sent");
      expect(await status(first, id)).toBe("COMPLETED");
      expect(first.events.published.map((e) => e.type)).toEqual(["started"]);
      await first.store.close();

      const second = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
      await run(second, second.sender("restarted"));
      await run(second, second.sender("restarted"));
      expect(second.events.published.map((e) => e.type)).toEqual(["completed"]);
      expect(second.events.published[0].broadcast).toMatchObject({ id, status: "COMPLETED", progress: { recipients: 3, sent: 3, delivered: 3 } });
      expect(second.events.published[0].broadcast).not.toHaveProperty("completedEventPending");
      expect(await second.repos.broadcasts.unannouncedCompletions(10)).toEqual([]);
      await second.store.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a COMPLETED published at once leaves nothing for the sweep", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(2);
    const id = await scheduled(w, "ASAP");
    await run(w);
    await w.settleAll(id, "sent");
    expect(w.events.published.map((e) => e.type)).toEqual(["started", "completed"]);
    expect(await w.repos.broadcasts.unannouncedCompletions(10)).toEqual([]);
    await run(w);
    expect(w.events.published.map((e) => e.type)).toEqual(["started", "completed"]);
  });

  it("an empty audience: STARTED then COMPLETED", async () => {
    const w = await buildTestWorld();
    const id = await scheduled(w, "ASAP");
    await run(w);
    expect(await status(w, id)).toBe("COMPLETED");
    expect(w.events.published.map((e) => [e.type, e.broadcast.status])).toEqual([["started", "IN_PROGRESS"], ["completed", "COMPLETED"]]);
  });
});

describe("an operator's pause of the workspace's sending", () => {
  it("refuses scheduling and test sends (403 sending_paused); a broadcast already sending holds, then carries on after resume", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(30);
    const { broadcast } = await w.service.create(WS, draft());
    w.directory.setWorkspace(WS, { sendingPaused: true, holdReason: "abuse report" });
    await expect(w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" })).rejects.toMatchObject({ code: "sending_paused", httpStatus: 403, message: expect.stringContaining("abuse report") });
    await expect(w.service.sendTest(WS, broadcast.id, ["owner@acme.test"])).rejects.toMatchObject({ code: "sending_paused" });
    w.directory.setWorkspace(WS, { sendingPaused: false });

    const id = await scheduled(w, "ASAP");
    w.directory.setWorkspace(WS, { sendingPaused: true });
    await run(w);
    expect(await status(w, id)).toBe("IN_PROGRESS");
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(0);
    w.clock.advance(MIN);
    await run(w);
    expect(w.queue.jobs).toHaveLength(0);

    w.directory.setWorkspace(WS, { sendingPaused: false });
    w.clock.advance(MIN);
    await run(w);
    expect(w.queue.distinct().size).toBe(30);
    await w.settleAll(id, "sent");
    expect(await status(w, id)).toBe("COMPLETED");
  });

  it("a ban holds it too and refuses scheduling with workspace_banned", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(5);
    const { broadcast } = await w.service.create(WS, draft());
    w.directory.setWorkspace(WS, { banned: true });
    await expect(w.service.schedule(WS, broadcast.id, {})).rejects.toMatchObject({ code: "workspace_banned", httpStatus: 403 });
  });
});
