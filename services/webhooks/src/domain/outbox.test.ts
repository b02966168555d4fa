import { describe, expect, it } from "vitest";
import { buildTestDomain, silentLogger, testSettings } from "../testing.js";
import { Outbox } from "./outbox.js";
import type { SendResult } from "./model.js";
import { dispatchMailEvent } from "./dispatch.js";
import type { MailEventData } from "./model.js";
import { legacySignature } from "./signature.js";

const HOUR = 3600_000;

function event(overrides: Partial<MailEventData> = {}): MailEventData {
  return {
    eventId: "evt_a",
    kind: "sent",
    source: "transactional",
    workspaceId: "ws_1",
    occurredAt: new Date("2030-01-15T12:00:30Z"),
    emailId: "trs_1",
    recipient: "ada@example.test",
    smtpCode: 250,
    ...overrides,
  };
}

async function setup(settings = {}) {
  const t = await buildTestDomain(settings);
  const dispatch = (e: MailEventData) => dispatchMailEvent({ webhooks: t.webhookStore, deliveries: t.deliveries, clock: t.clock, ids: t.ids }, e);
  return { ...t, dispatch };
}

describe("dispatcher", () => {
  it("creates one delivery per subscribed ACTIVE webhook of the event's workspace", async () => {
    const { webhooks, dispatch } = await setup();
    await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    await webhooks.create("ws_1", { url: "https://b.test/", events: ["EMAIL_BOUNCED"] });
    const paused = await webhooks.create("ws_1", { url: "https://c.test/", events: ["EMAIL_DELIVERED"] });
    await webhooks.update("ws_1", paused.id, { status: "PAUSED" });
    await webhooks.create("ws_2", { url: "https://d.test/", events: ["EMAIL_DELIVERED"] });
    expect(await dispatch(event())).toBe(1);
  });

  it("never creates a second delivery for a replayed event", async () => {
    const { webhooks, dispatch, sender, runOutbox } = await setup();
    await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    expect(await dispatch(event())).toBe(1);
    expect(await dispatch(event())).toBe(0);
    await runOutbox();
    expect(await dispatch(event())).toBe(0);
    await runOutbox();
    expect(sender.sent).toHaveLength(1);
  });

  it("gives a webhook only the events that happened after it was created", async () => {
    const { webhooks, dispatch } = await setup();
    await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    expect(await dispatch(event({ occurredAt: new Date("2030-01-15T11:00:00Z") }))).toBe(0);
    expect(await dispatch(event({ eventId: "evt_b", occurredAt: new Date("2030-01-15T12:00:00Z") }))).toBe(1);
  });

  it("ignores events no webhook event maps to", async () => {
    const { webhooks, dispatch } = await setup();
    await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    expect(await dispatch(event({ source: "broadcast_test" }))).toBe(0);
  });
});

describe("outbox", () => {
  it("sends the stored body with both signatures of the current token", async () => {
    const { webhooks, dispatch, sender, runOutbox } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"], token: "tok" });
    await dispatch(event());
    await runOutbox();
    const [req] = sender.sent;
    expect(req.url).toBe("https://a.test/");
    expect(req.headers["X-SMASHSEND-SIGNATURE"]).toBe(legacySignature("tok", req.body));
    expect(JSON.parse(req.body)).toEqual({
      id: "evt_a",
      type: "EMAIL_DELIVERED",
      createdAt: "2030-01-15T12:00:30.000Z",
      workspaceId: "ws_1",
      data: { source: "transactional", emailId: "trs_1", to: "ada@example.test", smtpCode: 250 },
    });
    expect((await webhooks.listDeliveries("ws_1", w.id))[0].state).toBe("SUCCEEDED");
  });

  it("retries on the schedule with the same body and webhook-id, then succeeds", async () => {
    const { webhooks, dispatch, sender, runOutbox, clock } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    sender.answers.set("https://a.test/", [500, 0, 200]);
    await dispatch(event());
    await runOutbox();
    expect(sender.sent).toHaveLength(1);
    clock.advance(4_999);
    await runOutbox();
    expect(sender.sent).toHaveLength(1); // not due before 5 s
    clock.advance(1);
    await runOutbox();
    expect(sender.sent).toHaveLength(2);
    clock.advance(30_000);
    await runOutbox();
    expect(sender.sent).toHaveLength(3);
    expect(new Set(sender.sent.map((r) => r.body)).size).toBe(1);
    expect(new Set(sender.sent.map((r) => r.headers["webhook-id"])).size).toBe(1);
    const [d] = await webhooks.listDeliveries("ws_1", w.id);
    expect(d).toMatchObject({ state: "SUCCEEDED", attempts: 3 });
    expect(d.history.map((a) => [a.statusCode, a.error])).toEqual([
      [500, "HTTP 500"],
      [0, "connection failed: ECONNREFUSED"],
      [200, undefined],
    ]);
  });

  it("gives a delivery up as FAILED when the schedule is spent (12 attempts, about 29 h)", async () => {
    const { webhooks, dispatch, sender, runOutbox, clock } = await setup({ pause: { afterMs: 1000 * HOUR, minFailures: 1000 } });
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    sender.answers.set("https://a.test/", [503]);
    await dispatch(event());
    for (let i = 0; i < 40; i++) {
      await runOutbox();
      clock.advance(HOUR);
    }
    const [d] = await webhooks.listDeliveries("ws_1", w.id);
    expect(d).toMatchObject({ state: "FAILED", attempts: 12 });
    expect(d.nextAttemptAt).toBeUndefined();
    expect(d.history[11].attemptedAt.getTime() - d.history[0].attemptedAt.getTime()).toBeGreaterThan(24 * HOUR);
  });

  it("fails a delivery whose target is refused at once, without retries, with the reason in its history", async () => {
    const { webhooks, dispatch, sender, runOutbox, clock } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    const error = "refused: a.test resolves to 10.0.0.1, a private address";
    sender.post = async (url, headers, body) => {
      sender.sent.push({ url, headers, body });
      return { statusCode: 0, durationMs: 1, error, permanent: true };
    };
    await dispatch(event());
    for (let i = 0; i < 3; i++) {
      await runOutbox();
      clock.advance(HOUR);
    }
    expect(sender.sent).toHaveLength(1);
    const [d] = await webhooks.listDeliveries("ws_1", w.id);
    expect(d).toMatchObject({ state: "FAILED", attempts: 1, lastAttempt: { statusCode: 0, error } });
    expect(d.nextAttemptAt).toBeUndefined();
  });

  it("pauses a webhook whose attempts keep failing, holds its deliveries, and resumes them on ACTIVE", async () => {
    const { webhooks, dispatch, sender, runOutbox, clock } = await setup({ pause: { afterMs: 24 * HOUR, minFailures: 10 } });
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED", "EMAIL_BOUNCED"] });
    const healthy = await webhooks.create("ws_1", { url: "https://b.test/", events: ["EMAIL_DELIVERED"] });
    sender.answers.set("https://a.test/", [500]);
    await dispatch(event());
    for (let i = 0; i < 30 && (await webhooks.get("ws_1", w.id)).status === "ACTIVE"; i++) {
      await runOutbox();
      clock.advance(HOUR);
      // New events keep coming while it fails.
      await dispatch(event({ eventId: `evt_${i}`, kind: "bounced" }));
    }
    const paused = await webhooks.get("ws_1", w.id);
    expect(paused.status).toBe("PAUSED");
    expect(paused.pausedReason).toMatch(/^Paused automatically: \d+ delivery attempts in a row failed since .* \(last: HTTP 500\)$/);
    expect((await webhooks.get("ws_1", healthy.id)).status).toBe("ACTIVE");

    // Held: nothing more is sent to it, however long we wait; new events are not queued for it.
    const sentBefore = sender.sent.filter((r) => r.url === "https://a.test/").length;
    await dispatch(event({ eventId: "evt_during_pause" }));
    clock.advance(48 * HOUR);
    await runOutbox();
    expect(sender.sent.filter((r) => r.url === "https://a.test/").length).toBe(sentBefore);
    const held = (await webhooks.listDeliveries("ws_1", w.id, 200)).filter((d) => d.state === "HELD");
    expect(held.length).toBeGreaterThan(1);

    // Resumed: every held delivery goes out at once, and the failure run starts over.
    sender.answers.set("https://a.test/", [200]);
    const resumed = await webhooks.update("ws_1", w.id, { status: "ACTIVE" });
    expect(resumed).toMatchObject({ status: "ACTIVE", consecutiveFailures: 0 });
    expect(resumed.pausedReason).toBeUndefined();
    await runOutbox();
    const after = await webhooks.listDeliveries("ws_1", w.id, 200);
    expect(after.filter((d) => d.state === "HELD" || d.state === "PENDING")).toEqual([]);
    expect(sender.sent.filter((r) => r.url === "https://a.test/").length).toBe(sentBefore + held.length);
  });

  it("pauses at once on 410 Gone", async () => {
    const { webhooks, dispatch, sender, runOutbox } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    sender.answers.set("https://a.test/", [410]);
    await dispatch(event());
    await runOutbox();
    expect(await webhooks.get("ws_1", w.id)).toMatchObject({ status: "PAUSED", pausedReason: "Paused automatically: the endpoint answered 410 Gone" });
    expect((await webhooks.listDeliveries("ws_1", w.id))[0].state).toBe("HELD");
  });

  it("a success ends the run of failures", async () => {
    const { webhooks, dispatch, sender, runOutbox, clock, webhookStore } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    sender.answers.set("https://a.test/", [500, 200]);
    await dispatch(event());
    await runOutbox();
    expect((await webhookStore.findById(w.id))!.consecutiveFailures).toBe(1);
    clock.advance(10_000);
    await runOutbox();
    const after = (await webhookStore.findById(w.id))!;
    expect(after.consecutiveFailures).toBe(0);
    expect(after.failingSince).toBeUndefined();
  });

  it("redelivers one delivery on demand with a fresh schedule", async () => {
    const { webhooks, dispatch, sender, runOutbox } = await setup();
    const w = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    await dispatch(event());
    await runOutbox();
    const [d] = await webhooks.listDeliveries("ws_1", w.id);
    const again = await webhooks.redeliver("ws_1", w.id, d.id);
    expect(again).toMatchObject({ state: "PENDING", retryStep: 0 });
    await runOutbox();
    expect(sender.sent).toHaveLength(2);
    expect(sender.sent[1].headers["webhook-id"]).toBe(d.id);
    expect(sender.sent[1].body).toBe(sender.sent[0].body);
    expect((await webhooks.listDeliveries("ws_1", w.id))[0]).toMatchObject({ state: "SUCCEEDED", attempts: 2 });
  });

  it("keeps at most maxPerEndpoint attempts in flight per webhook; a blocked webhook does not block another", async () => {
    const t = await setup();
    const a = await t.webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    const b = await t.webhooks.create("ws_1", { url: "https://b.test/", events: ["EMAIL_DELIVERED"] });
    // a never answers until released; b answers at once.
    const releases: Array<() => void> = [];
    const calls: string[] = [];
    const sender = {
      post: (url: string): Promise<SendResult> => {
        calls.push(url);
        if (url === "https://b.test/") return Promise.resolve({ statusCode: 200, durationMs: 1 });
        return new Promise((resolve) => releases.push(() => resolve({ statusCode: 200, durationMs: 1 })));
      },
    };
    const outbox = new Outbox({
      deliveries: t.deliveries,
      webhooks: t.webhookStore,
      sender,
      clock: t.clock,
      logger: silentLogger,
      owner: "p",
      settings: { ...testSettings, maxPerEndpoint: 2 },
    });
    outbox.start();
    for (let i = 0; i < 6; i++) await t.dispatch(event({ eventId: `evt_${i}` }));
    await outbox.drain();
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.filter((u) => u === "https://a.test/")).toHaveLength(2);
    expect(calls.filter((u) => u === "https://b.test/")).toHaveLength(6);
    const bDone = await t.webhooks.listDeliveries("ws_1", b.id);
    expect(bDone.every((d) => d.state === "SUCCEEDED")).toBe(true);
    // Releasing a's slots lets its other deliveries through, two at a time.
    while (calls.filter((u) => u === "https://a.test/").length < 6 || releases.length > 0) {
      releases.splice(0).forEach((release) => release());
      await new Promise((r) => setTimeout(r, 20));
    }
    await outbox.stop();
    expect((await t.webhooks.listDeliveries("ws_1", a.id)).every((d) => d.state === "SUCCEEDED")).toBe(true);
  });

  it("two processes sharing the store never send one attempt twice", async () => {
    const t = await setup();
    const w = await t.webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    const sent: string[] = [];
    const sender = {
      post: async (_url: string, headers: Record<string, string>): Promise<SendResult> => {
        sent.push(headers["webhook-id"]);
        await new Promise((r) => setTimeout(r, 2));
        return { statusCode: 200, durationMs: 2 };
      },
    };
    const make = (owner: string) =>
      new Outbox({ deliveries: t.deliveries, webhooks: t.webhookStore, sender, clock: t.clock, logger: silentLogger, owner, settings: { ...testSettings, maxPerEndpoint: 3 } });
    const [p1, p2] = [make("p1"), make("p2")];
    for (let i = 0; i < 20; i++) await t.dispatch(event({ eventId: `evt_${i}` }));
    p1.start();
    p2.start();
    for (let i = 0; i < 50 && sent.length < 20; i++) {
      await Promise.all([p1.drain(), p2.drain()]);
      await Promise.all([p1.idle(), p2.idle()]);
    }
    await Promise.all([p1.stop(), p2.stop()]);
    expect(sent).toHaveLength(20);
    expect(new Set(sent).size).toBe(20);
    expect((await t.webhooks.listDeliveries("ws_1", w.id)).every((d) => d.state === "SUCCEEDED" && d.attempts === 1)).toBe(true);
  });

  it("skips busy webhooks when claiming", async () => {
    const { webhooks, dispatch, deliveries, clock } = await setup({ maxPerEndpoint: 2 });
    const a = await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    await webhooks.create("ws_1", { url: "https://b.test/", events: ["EMAIL_DELIVERED"] });
    for (let i = 0; i < 3; i++) await dispatch(event({ eventId: `evt_${i}` }));
    // Claims with webhook a busy skip straight to b's deliveries.
    const all = await deliveries.claimable(clock.now(), [], 100);
    const notA = await deliveries.claimable(clock.now(), [a.id], 100);
    expect(all).toHaveLength(6);
    expect(notA).toHaveLength(3);
    expect(notA.every((c) => c.webhookId !== a.id)).toBe(true);
    // A claim is a compare-and-set: the second taker gets nothing.
    const lease = new Date(clock.now().getTime() + 60_000);
    expect(await deliveries.claim(all[0].id, clock.now(), "p1", lease)).toMatchObject({ id: all[0].id });
    expect(await deliveries.claim(all[0].id, clock.now(), "p2", lease)).toBeNull();
    expect(await deliveries.claimable(clock.now(), [], 100)).toHaveLength(5);
  });

  it("takes over a claim whose process died (lease ran out)", async () => {
    const { webhooks, dispatch, deliveries, clock, sender, runOutbox } = await setup();
    await webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED"] });
    await dispatch(event());
    const [candidate] = await deliveries.claimable(clock.now(), [], 10);
    expect(await deliveries.claim(candidate.id, clock.now(), "dead", new Date(clock.now().getTime() + 40_000))).not.toBeNull();
    await runOutbox();
    expect(sender.sent).toHaveLength(0);
    clock.advance(40_001);
    await runOutbox();
    expect(sender.sent).toHaveLength(1);
  });
});
