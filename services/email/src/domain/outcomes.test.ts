import { describe, expect, it } from "vitest";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";
import { recordEvent, type OutcomeEvent } from "./outcomes.js";

const WS = "ws_acme";
const email = (groupBy?: string): EmailRequest => ({
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject: "Hi", html: '<p><a href="https://acme.test/a">a</a></p>' },
  groupBy,
});

let n = 0;
const event = (w: TestWorld, emailId: string, kind: OutcomeEvent["kind"], extra: Partial<OutcomeEvent> = {}): OutcomeEvent => ({
  eventId: `evt_${++n}`,
  emailId,
  kind,
  at: w.clock.now(),
  ...extra,
});

describe("per-email outcomes", () => {
  it("keeps the latest event by time when events arrive out of order, still applying the older one once", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email());
    const delivered = event(w, sent.id, "sent");
    w.clock.advance(60_000);
    // A provider's deferral, later in time, consumed before our own DELIVERED (events run concurrently).
    const deferred = event(w, sent.id, "deferred", { detail: "452 mailbox full" });
    expect(await recordEvent(w.outcomeDeps, deferred)).toBe(true);
    expect(await recordEvent(w.outcomeDeps, delivered)).toBe(true);
    expect(await recordEvent(w.outcomeDeps, delivered)).toBe(false);
    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("DELIVERED");
    expect(record.outcomes).toMatchObject({ deliveredAt: delivered.at, deferrals: 1, lastEvent: { type: "DEFERRED", at: deferred.at } });
    // A later event still moves it on.
    w.clock.advance(60_000);
    const opened = event(w, sent.id, "opened");
    expect(await recordEvent(w.outcomeDeps, opened)).toBe(true);
    expect((await w.service.get(WS, sent.id)).outcomes).toMatchObject({ lastEvent: { type: "OPENED", at: opened.at } });
  });

  it("counts opens, clicks per link, delivery and unsubscribes, each event once however often it arrives", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email("welcome"));
    const day = w.clock.now().toISOString().slice(0, 10);
    const delivered = event(w, sent.id, "sent");
    const open1 = event(w, sent.id, "opened");
    w.clock.advance(60_000);
    const open2 = event(w, sent.id, "opened");
    const clickA = event(w, sent.id, "clicked", { url: "https://acme.test/a" });
    const clickA2 = event(w, sent.id, "clicked", { url: "https://acme.test/a" });
    const clickB = event(w, sent.id, "clicked", { url: "https://acme.test/b?x=1.2" });
    const unsub = event(w, sent.id, "unsubscribed");
    for (const e of [delivered, open1, open2, clickA, clickA2, clickB, unsub]) {
      expect(await recordEvent(w.outcomeDeps, e)).toBe(true);
      // The same event again (a redelivery, a republish): nothing changes.
      expect(await recordEvent(w.outcomeDeps, e)).toBe(false);
    }
    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("DELIVERED");
    expect(record.outcomes).toMatchObject({
      opens: 2,
      clicks: 3,
      firstOpenedAt: open1.at,
      lastOpenedAt: open2.at,
      firstClickedAt: clickA.at,
      deliveredAt: delivered.at,
      unsubscribedAt: unsub.at,
      lastEvent: { type: "UNSUBSCRIBED", at: unsub.at },
      links: [
        { url: "https://acme.test/a", clicks: 2, lastClickedAt: clickA2.at },
        { url: "https://acme.test/b?x=1.2", clicks: 1, lastClickedAt: clickB.at },
      ],
    });

    const stats = await w.service.stats(WS, { from: day, to: day });
    expect(stats.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1, clicked: 1, unsubscribed: 1, opens: 2, clicks: 3, bounced: 0 });
    expect(stats.days).toEqual([{ date: day, counters: stats.totals }]);
    expect(stats.groups).toEqual([{ groupBy: "welcome", counters: stats.totals }]);
  });

  it("tells hard from soft bounces, counts an email sent once, and stats by day and group", async () => {
    const w = await buildTestWorld();
    const a = await w.service.send(WS, email("a"));
    const b = await w.service.send(WS, email());
    const firstDay = w.clock.now().toISOString().slice(0, 10);
    await recordEvent(w.outcomeDeps, event(w, a.id, "bounced", { permanent: true, smtpCode: 550 }));
    await recordEvent(w.outcomeDeps, event(w, b.id, "sent"));
    // An asynchronous soft bounce after acceptance: still one email sent.
    await recordEvent(w.outcomeDeps, event(w, b.id, "bounced", { permanent: false }));
    w.clock.advance(24 * 3600_000);
    const c = await w.service.send(WS, email("a"));
    await recordEvent(w.outcomeDeps, event(w, c.id, "complained"));
    await recordEvent(w.outcomeDeps, event(w, c.id, "sent"));
    const secondDay = w.clock.now().toISOString().slice(0, 10);

    expect((await w.service.get(WS, a.id)).outcomes).toMatchObject({ bounceType: "hard", opens: 0 });
    expect((await w.service.get(WS, b.id)).outcomes).toMatchObject({ bounceType: "soft" });
    const stats = await w.service.stats(WS, { from: firstDay, to: secondDay });
    expect(stats.totals).toMatchObject({ sent: 3, delivered: 2, bounced: 2, hardBounced: 1, complained: 1 });
    expect(stats.days.map((d) => [d.date, d.counters.sent])).toEqual([[firstDay, 2], [secondDay, 1]]);
    expect(stats.groups.map((g) => [g.groupBy, g.counters.sent])).toEqual([["a", 2], ["", 1]]);
    const onlyA = await w.service.stats(WS, { from: firstDay, to: secondDay, groupBy: "a" });
    expect(onlyA.totals).toMatchObject({ sent: 2, bounced: 1, complained: 1 });
    // Another workspace sees nothing.
    expect((await w.service.stats("ws_other", { from: firstDay, to: secondDay })).totals.sent).toBe(0);
  });

  it("refuses a range over 366 days or backwards, and defaults to the last 30 days", async () => {
    const w = await buildTestWorld();
    await expect(w.service.stats(WS, { from: "2029-01-01", to: "2030-01-02" })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(w.service.stats(WS, { from: "2030-01-02", to: "2030-01-01" })).rejects.toMatchObject({ code: "invalid_request" });
    await expect(w.service.stats(WS, { from: "yesterday" })).rejects.toMatchObject({ code: "invalid_request" });
    expect((await w.service.stats(WS, { from: "2029-01-02", to: "2030-01-02" })).days).toHaveLength(366);
    const recent = await w.service.stats(WS, {});
    expect(recent.days).toHaveLength(30);
    expect(recent.to).toBe(w.clock.now().toISOString().slice(0, 10));
  });

  it("ignores events of unknown emails", async () => {
    const w = await buildTestWorld();
    expect(await recordEvent(w.outcomeDeps, event(w, "trs_00000000000000000000000000", "opened"))).toBe(false);
  });
});

describe("replies (DESIGN §10.4)", () => {
  it("counts each reply once and keeps the latest, leaving the status and the latest outcome as they were", async () => {
    const { outcomeEventOf } = await import("../consumers.js");
    const { create } = await import("@bufbuild/protobuf");
    const { MailEventSchema, MailEventType, DeliverySource } = await import("@mailroom/proto/events/v1/events_pb.js");
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email());
    const delivered = event(w, sent.id, "sent");
    expect(await recordEvent(w.outcomeDeps, delivered)).toBe(true);
    w.clock.advance(60_000);
    const replyOf = (eventId: string, rcv: string) =>
      outcomeEventOf(
        create(MailEventSchema, { eventId, type: MailEventType.REPLIED, workspaceId: WS, source: DeliverySource.TRANSACTIONAL, emailId: sent.id, detail: rcv }),
        w.clock.now(),
      )!;
    const first = replyOf("replied-rcv_1", "rcv_1");
    expect(first).toMatchObject({ kind: "replied", emailId: sent.id, receivedId: "rcv_1" });
    expect(await recordEvent(w.outcomeDeps, first)).toBe(true);
    expect(await recordEvent(w.outcomeDeps, first)).toBe(false);
    w.clock.advance(60_000);
    expect(await recordEvent(w.outcomeDeps, replyOf("replied-rcv_2", "rcv_2"))).toBe(true);
    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("DELIVERED");
    expect(record.outcomes).toMatchObject({ replies: 2, lastReply: { at: w.clock.now(), receivedId: "rcv_2" }, lastEvent: { type: "DELIVERED" } });
  });
});
