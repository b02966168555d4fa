import { afterEach, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openStore } from "@mailroom/store/open.js";
import { buildTestWorld, ManualClock, silentLogger, type TestWorld } from "../testing.js";
import { Scheduler } from "./scheduler.js";
import type { EmailRequest } from "./model.js";
import { applyOutcome } from "./outcomes.js";

const WS = "ws_acme";
const HOUR = 3600_000;
const at = (w: TestWorld, ms: number): EmailRequest => ({
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject: "Later", html: "<p>Later</p>" },
  sendAt: new Date(w.clock.now().getTime() + ms),
});

describe("scheduled emails", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
  });

  it("releases an email when its time comes, not before, and marks it SENT", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send(WS, at(w, HOUR));
    const scheduler = w.scheduler();
    expect(await scheduler.tick()).toBe(0);
    w.clock.advance(HOUR - 1);
    expect(await scheduler.tick()).toBe(0);
    w.clock.advance(1);
    expect(await scheduler.tick()).toBe(1);
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([record.id]);
    expect((await w.service.get(WS, record.id)).status).toBe("SENT");
    expect(await scheduler.tick()).toBe(0);
  });

  it("publishes each due email exactly once with two schedulers racing on one store", async () => {
    const w = await buildTestWorld();
    const ids = new Set<string>();
    for (let i = 0; i < 60; i++) ids.add((await w.service.send(WS, at(w, HOUR + i))).id);
    w.clock.advance(2 * HOUR);
    const a = w.scheduler("process-a");
    const b = w.scheduler("process-b");
    const [na, nb] = await Promise.all([a.tick(), b.tick()]);
    expect(na + nb).toBe(60);
    expect(na).toBeGreaterThan(0);
    expect(nb).toBeGreaterThan(0);
    const counts = w.queue.countsById();
    expect(new Set(counts.keys())).toEqual(ids);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });

  it("survives a restart: emails scheduled before it are sent by the new process", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "email-sched-"));
    dirs.push(dir);
    const clock = new ManualClock();
    const before = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "email" }), clock });
    const record = await before.service.send(WS, at(before, HOUR));
    await before.store.close();

    clock.advance(HOUR);
    const after = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "email" }), clock, owner: "restarted" });
    expect(await after.scheduler().tick()).toBe(1);
    expect(after.queue.jobs[0]).toMatchObject({ emailId: record.id, recipient: "ann@example.test", fromEmail: "team@acme.test" });
    expect((await after.service.compiledContent(WS, record.id)).length).toBeGreaterThan(0);
    await after.store.close();
  });

  it("takes over a claim whose process died before publishing, once its lease ran out", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send(WS, at(w, HOUR));
    w.clock.advance(HOUR);
    // Process A claims and dies without publishing.
    const claimed = await w.deps.emails.claimDue(w.clock.now(), "dead-process", new Date(w.clock.now().getTime() + 30_000));
    expect(claimed?.id).toBe(record.id);
    const b = w.scheduler("process-b");
    expect(await b.tick()).toBe(0);
    w.clock.advance(30_001);
    expect(await b.tick()).toBe(1);
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([record.id]);
    // The dead process coming back cannot mark it published under its name.
    expect(await w.deps.emails.markPublished([record.id], "dead-process", w.clock.now())).toBe(0);
  });

  it("cancels a scheduled email so it is never sent, and releases its usage", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send(WS, at(w, HOUR));
    expect(w.directory.used).toBe(1);
    const cancelled = await w.service.cancel(WS, record.id);
    expect(cancelled.status).toBe("CANCELLED");
    expect(w.directory.used).toBe(0);
    w.clock.advance(2 * HOUR);
    expect(await w.scheduler().tick()).toBe(0);
    expect(w.queue.jobs).toHaveLength(0);
    expect((await w.service.get(WS, record.id)).status).toBe("CANCELLED");
    await expect(w.service.cancel(WS, record.id)).rejects.toMatchObject({ code: "email_not_cancellable", httpStatus: 409 });
  });

  it("lets either the cancel or the claim win a race, never both", async () => {
    const w = await buildTestWorld();
    const records = [];
    for (let i = 0; i < 20; i++) records.push(await w.service.send(WS, at(w, HOUR)));
    w.clock.advance(HOUR);
    const scheduler = w.scheduler();
    const [, cancels] = await Promise.all([
      scheduler.tick(),
      Promise.allSettled(records.map((r) => w.service.cancel(WS, r.id))),
    ]);
    const published = new Set(w.queue.jobs.map((j) => j.emailId));
    records.forEach((r, i) => {
      const c = cancels[i];
      if (c.status === "fulfilled") expect(published.has(r.id)).toBe(false);
      else {
        expect(c.reason).toMatchObject({ code: "email_not_cancellable" });
        expect(published.has(r.id)).toBe(true);
      }
    });
    expect(published.size + cancels.filter((c) => c.status === "fulfilled").length).toBe(20);
  });

  it("refuses to cancel a sent email (409), an unknown one and another workspace's (404)", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, { ...at(w, 0), sendAt: undefined });
    await expect(w.service.cancel(WS, sent.id)).rejects.toMatchObject({ code: "email_not_cancellable", httpStatus: 409 });
    await expect(w.service.cancel(WS, "trs_missing")).rejects.toMatchObject({ code: "email_not_found", httpStatus: 404 });
    const scheduled = await w.service.send(WS, at(w, HOUR));
    await expect(w.service.cancel("ws_other", scheduled.id)).rejects.toMatchObject({ code: "email_not_found" });
  });

  it("runs as a loop that stops cleanly", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send(WS, at(w, 1000));
    w.clock.advance(1000);
    const scheduler = w.scheduler();
    scheduler.start();
    const deadline = Date.now() + 2000;
    while (w.queue.jobs.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await scheduler.stop();
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([record.id]);
  });
});

describe("delivery outcomes", () => {
  it("moves SENT to DELIVERED, a bounce to FAILED with its reason, and ignores replays", async () => {
    const w = await buildTestWorld();
    const a = await w.service.send(WS, { ...at(w, 0), sendAt: undefined });
    const b = await w.service.send(WS, { ...at(w, 0), sendAt: undefined });
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: a.id, kind: "sent" })).toBe(true);
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: a.id, kind: "sent" })).toBe(false);
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: b.id, kind: "bounced", smtpCode: 550, detail: "no such user" })).toBe(true);
    expect(await w.service.get(WS, a.id)).toMatchObject({ status: "DELIVERED" });
    expect(await w.service.get(WS, b.id)).toMatchObject({ status: "FAILED", statusReason: "Bounced (550): no such user" });
    // A late "failed" cannot undo an acceptance; an asynchronous bounce can.
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: a.id, kind: "failed", detail: "content gone" })).toBe(false);
    expect((await w.service.get(WS, a.id)).status).toBe("DELIVERED");
    // Final emails no longer keep their compiled content.
    await expect(w.service.compiledContent(WS, a.id)).rejects.toMatchObject({ code: "email_not_found" });
  });

  it("never moves a scheduled or cancelled email", async () => {
    const w = await buildTestWorld();
    const s = await w.service.send(WS, at(w, HOUR));
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: s.id, kind: "sent" })).toBe(false);
    await w.service.cancel(WS, s.id);
    expect(await applyOutcome(w.deps.emails, w.clock, { emailId: s.id, kind: "failed" })).toBe(false);
    expect((await w.service.get(WS, s.id)).status).toBe("CANCELLED");
  });
});

describe("the creating request's trace context (DESIGN §9.10)", () => {
  const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  it("keeps it on the email and hands the email to the release scope when the scheduler publishes it", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send(WS, at(w, HOUR), { traceparent: TRACEPARENT });
    expect((await w.deps.emails.find(WS, record.id))?.traceparent).toBe(TRACEPARENT);
    const scoped: Array<{ id: string; traceparent?: string; jobsBefore: number }> = [];
    const scheduler = new Scheduler(w.deps.emails, w.queue, w.content, w.clock, silentLogger, {
      owner: "test-process",
      releaseScope: async (email, release) => {
        scoped.push({ id: email.id, traceparent: email.traceparent, jobsBefore: w.queue.jobs.length });
        return release();
      },
    });
    w.clock.advance(HOUR);
    expect(await scheduler.tick()).toBe(1);
    // The job was published inside the scope (so in the trace the scope opens), not before it.
    expect(scoped).toEqual([{ id: record.id, traceparent: TRACEPARENT, jobsBefore: 0 }]);
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([record.id]);
  });

  it("stores nothing when there is none (tracing off) and for a suppressed recipient", async () => {
    const w = await buildTestWorld();
    const untraced = await w.service.send(WS, at(w, HOUR), { traceparent: "" });
    expect((await w.deps.emails.find(WS, untraced.id))?.traceparent).toBeUndefined();
    w.directory.suppressions.set("ann@example.test", "hard_bounce");
    const suppressed = await w.service.send(WS, at(w, HOUR), { traceparent: TRACEPARENT });
    expect((await w.deps.emails.find(WS, suppressed.id))?.traceparent).toBeUndefined();
  });

  it("keeps it on every email of a batch, immediate ones included (a publisher that dies leaves them to the scheduler)", async () => {
    const w = await buildTestWorld();
    const result = await w.service.sendBatch(WS, [at(w, HOUR), { ...at(w, 0), sendAt: undefined }], { traceparent: TRACEPARENT });
    expect(result.successful).toHaveLength(2);
    for (const r of result.successful) expect((await w.deps.emails.find(WS, r.id))?.traceparent).toBe(TRACEPARENT);
  });
});
