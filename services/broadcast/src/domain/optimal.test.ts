import { describe, expect, it } from "vitest";
import { buildTestWorld, draft, ManualClock, type TestWorld } from "../testing.js";
import { optimalDueAt } from "./pacing.js";

/**
 * OPTIMAL (DESIGN §10.5) under a fake clock: the audience unit's plan (each contact's best hour,
 * faked here as its PlanBestHours answers it; the plan itself is tested in
 * services/audience/src/domain/best-hour.test.ts) decides when each recipient is released.
 */

const WS = "ws_acme";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (iso: string) => Date.parse(iso);

async function run(w: TestWorld, sender = w.sender()) {
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

const released = (w: TestWorld) => w.queue.jobs.map((j) => j.recipient.email).sort();

describe("optimalDueAt", () => {
  it("takes the planned hour within 24 hours of sendAt, else the SMART time", () => {
    const sendAt = new Date("2030-01-15T08:00:00Z");
    expect(optimalDueAt(at("2030-01-15T19:00:00Z"), sendAt, "Europe/Paris", "Asia/Tokyo").toISOString()).toBe("2030-01-15T19:00:00.000Z");
    // No plan: as SMART (09:00 Paris → 09:00 Tokyo the next morning).
    expect(optimalDueAt(undefined, sendAt, "Europe/Paris", "Asia/Tokyo").toISOString()).toBe("2030-01-16T00:00:00.000Z");
    // A plan outside [sendAt, sendAt + 24 h) is not followed.
    expect(optimalDueAt(sendAt.getTime() + DAY, sendAt, "Europe/Paris", "").toISOString()).toBe("2030-01-15T08:00:00.000Z");
    expect(optimalDueAt(sendAt.getTime() - 1, sendAt, "Europe/Paris", "").toISOString()).toBe("2030-01-15T08:00:00.000Z");
  });
});

describe("OPTIMAL in the release loop", () => {
  async function world(plans: Record<number, number | undefined>) {
    const clock = new ManualClock(at("2030-01-15T07:00:00Z"));
    const w = await buildTestWorld({ clock });
    w.directory.setWorkspace(WS, { timezone: "Europe/Paris" });
    const zones = ["", "Europe/Paris", "America/New_York", "", "Asia/Tokyo"];
    w.directory.addContacts(5, (i) => ({ timezone: zones[i] }));
    const byId = new Map(w.directory.contacts.map((c, i) => [c.id, plans[i]]));
    w.directory.bestHourOf = (id) => byId.get(id);
    return { w, clock };
  }

  it("sends each contact at its best hour; those without history as SMART; nobody later than 24 hours", async () => {
    // c0 and c1 have plans; c2 (New York) and c3 (no zone) none; c4's plan is out of the window.
    const { w, clock } = await world({ 0: at("2030-01-15T10:00:00Z"), 1: at("2030-01-15T20:00:00Z"), 4: at("2030-01-16T09:00:00Z") });
    const { broadcast } = await w.service.create(WS, draft());
    const sendAt = new Date("2030-01-15T08:00:00Z");
    const scheduled = await w.service.schedule(WS, broadcast.id, { deliveryMethod: "OPTIMAL", sendAt });
    expect(scheduled.broadcast.deliveryMethod).toBe("OPTIMAL");
    await run(w);
    expect(released(w)).toEqual([]);
    expect(w.directory.bestHourCalls).toEqual([]); // planned when sending starts, not at schedule

    const steps: [string, string[]][] = [
      ["2030-01-15T08:00:00Z", ["c3"]], // no history, no zone: at sendAt
      ["2030-01-15T09:59:59Z", ["c3"]],
      ["2030-01-15T10:00:00Z", ["c0", "c3"]], // its best hour
      ["2030-01-15T14:00:00Z", ["c0", "c2", "c3"]], // no history: 09:00 Paris is 09:00 New York
      ["2030-01-15T19:59:00Z", ["c0", "c2", "c3"]],
      ["2030-01-15T20:00:00Z", ["c0", "c1", "c2", "c3"]],
      ["2030-01-16T00:00:00Z", ["c0", "c1", "c2", "c3", "c4"]], // a plan past 24 h is not followed: as SMART, 09:00 Tokyo
    ];
    for (const [time, who] of steps) {
      clock.set(time);
      await run(w);
      expect([time, released(w)]).toEqual([time, who.map((c) => `${c}@example.test`)]);
    }
    expect(w.directory.bestHourCalls).toHaveLength(1);
    expect(w.directory.bestHourCalls[0]).toMatchObject({ windowStart: sendAt.getTime(), contacts: w.directory.contacts.map((c) => c.id) });
    const pages = await w.store.collection("broadcast_pages").find({ broadcastId: broadcast.id });
    const dues = pages.flatMap((p) => (p.recipients as { dueAt: number }[]).map((r) => r.dueAt));
    expect(dues.every((d) => d >= sendAt.getTime() && d <= sendAt.getTime() + DAY)).toBe(true);
    // The progress chart's planned curve: each recipient in the minute it is due.
    const planned = (await w.repos.timeline.list(broadcast.id)).filter((p) => p.planned).map((p) => [p.at.toISOString(), p.planned]);
    expect(planned).toEqual([
      ["2030-01-15T08:00:00.000Z", 1], ["2030-01-15T10:00:00.000Z", 1], ["2030-01-15T14:00:00.000Z", 1], ["2030-01-15T20:00:00.000Z", 1], ["2030-01-16T00:00:00.000Z", 1],
    ]);
    await w.settleAll(broadcast.id);
    expect((await w.service.get(WS, broadcast.id)).status).toBe("COMPLETED");
  });

  it("a cancel before the start lets nothing out and plans nothing", async () => {
    const { w, clock } = await world({ 0: at("2030-01-15T10:00:00Z") });
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "OPTIMAL", sendAt: new Date("2030-01-15T08:00:00Z") });
    await w.service.cancel(WS, broadcast.id);
    clock.set("2030-01-16T12:00:00Z");
    await run(w);
    expect((await w.service.get(WS, broadcast.id)).status).toBe("DRAFT");
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.bestHourCalls).toHaveLength(0);
  });

  it("an operator's pause holds the due contacts; after the resume they go, the others still at their hours", async () => {
    const { w, clock } = await world({ 0: at("2030-01-15T10:00:00Z"), 1: at("2030-01-15T20:00:00Z"), 2: at("2030-01-15T09:00:00Z"), 3: at("2030-01-15T09:00:00Z"), 4: at("2030-01-15T21:00:00Z") });
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "OPTIMAL", sendAt: new Date("2030-01-15T08:00:00Z") });
    clock.set("2030-01-15T08:00:00Z");
    await run(w);
    w.directory.setWorkspace(WS, { sendingPaused: true });
    clock.set("2030-01-15T11:00:00Z");
    await run(w);
    expect(released(w)).toEqual([]);
    w.directory.setWorkspace(WS, { sendingPaused: false });
    clock.set("2030-01-15T11:00:10Z");
    await run(w);
    expect(released(w)).toEqual(["c0@example.test", "c2@example.test", "c3@example.test"]);
    clock.set("2030-01-15T20:30:00Z");
    await run(w);
    expect(released(w)).toEqual(["c0@example.test", "c1@example.test", "c2@example.test", "c3@example.test"]);
    clock.set("2030-01-15T21:00:00Z");
    await run(w);
    expect(released(w)).toHaveLength(5);
  });
});

describe("OPTIMAL with an A/B test", () => {
  it("the test share goes at its best hours from sendAt; after the winner the rest is planned again from the choice", async () => {
    const clock = new ManualClock(at("2030-01-15T08:00:00Z"));
    const w = await buildTestWorld({ clock });
    w.directory.addContacts(100);
    // Each contact's best hour: (its number mod 10) hours into the window, whatever the window (thin history for odd ones: none).
    const index = new Map(w.directory.contacts.map((c, i) => [c.id, i]));
    w.directory.bestHourOf = (id, windowStart) => (index.get(id)! % 2 === 1 ? undefined : windowStart + (index.get(id)! % 10) * HOUR);
    const { broadcast } = await w.service.create(WS, draft({ abTest: { variants: [{ subject: "A {{firstName}}" }, { subject: "B" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600 } }));
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "OPTIMAL" });
    const sendAt = clock.now().getTime();
    await run(w);
    const dueOf = async () => {
      const pages = await w.store.collection("broadcast_pages").find({ broadcastId: broadcast.id });
      return new Map(pages.flatMap((p) => (p.recipients as { contactId: string; dueAt: number }[]).map((r) => [r.contactId, { dueAt: r.dueAt, held: p.held === true }])));
    };
    const test = [...(await dueOf())].filter(([, r]) => !r.held);
    expect(test).toHaveLength(20);
    for (const [id, r] of test) expect(r.dueAt).toBe(index.get(id)! % 2 === 1 ? sendAt : sendAt + (index.get(id)! % 10) * HOUR);
    // Every test recipient released by its hour, up to the test share's latest (at most 8 h here:
    // which contacts the split takes depends on the broadcast's random id), then the wait of an hour.
    const lastHour = Math.max(...test.map(([, r]) => (r.dueAt - sendAt) / HOUR));
    for (let h = 1; h <= lastHour; h++) {
      clock.set(new Date(sendAt + h * HOUR));
      await run(w);
    }
    expect(w.queue.jobs).toHaveLength(20);
    await w.settleAll(broadcast.id, "sent");
    clock.set(new Date(sendAt + (lastHour + 1) * HOUR + 1_000));
    await run(w);
    const b = await w.service.get(WS, broadcast.id);
    expect(b.abTest).toMatchObject({ state: "decided" });
    const chosenAt = new Date(b.abTest!.winnerChosenAt!).getTime();
    // The rest was planned from the choice, not from sendAt.
    const restCall = w.directory.bestHourCalls.at(-1)!;
    expect(restCall.windowStart).toBe(chosenAt);
    expect(restCall.contacts).toHaveLength(80);
    const rest = [...(await dueOf())].filter(([id]) => !test.some(([t]) => t === id));
    expect(rest).toHaveLength(80);
    for (const [id, r] of rest) {
      expect(r.dueAt).toBe(index.get(id)! % 2 === 1 ? chosenAt : chosenAt + (index.get(id)! % 10) * HOUR);
      expect(r.dueAt - chosenAt).toBeLessThan(DAY);
    }
    // Released at those hours: the odd ones (no plan, no zone) at once, the others by chosenAt + 8 h.
    const sentNow = w.queue.jobs.length - 20;
    expect(sentNow).toBe(rest.filter(([, r]) => r.dueAt <= chosenAt).length);
    clock.set(new Date(chosenAt + 9 * HOUR));
    await run(w);
    expect(w.queue.distinct().size).toBe(100);
    // The planned curve holds the test share (from sendAt) and the rest (from the choice), each once.
    const timeline = await w.repos.timeline.list(broadcast.id);
    expect(timeline.reduce((n, p) => n + p.planned, 0)).toBe(100);
    expect(timeline.filter((p) => p.at.getTime() >= chosenAt - 60_000).reduce((n, p) => n + p.planned, 0)).toBe(80);
  });
});
