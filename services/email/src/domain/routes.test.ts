import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { outcomeEventOf } from "../consumers.js";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";
import { recordEvent, type OutcomeEvent } from "./outcomes.js";

/** DESIGN §9.7: the delivery route on the email, and a relay provider's DELIVERED. */
const WS = "ws_acme";
const email: EmailRequest = { to: "ann@example.test", content: { kind: "raw", from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" } };

let n = 0;
const event = (w: TestWorld, emailId: string, kind: OutcomeEvent["kind"], extra: Partial<OutcomeEvent> = {}): OutcomeEvent => ({
  eventId: `evt_route_${++n}`,
  emailId,
  kind,
  at: w.clock.now(),
  ...extra,
});

describe("delivery routes on the email", () => {
  it("keeps the last route that tried, the one that delivered, and the deferrals with theirs", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email);
    const d1 = event(w, sent.id, "deferred", { route: "primary", detail: "451 4.7.1 greylisted", smtpCode: 451 });
    w.clock.advance(60_000);
    const d2 = event(w, sent.id, "deferred", { route: "primary", detail: "421 try later", smtpCode: 421 });
    w.clock.advance(60_000);
    const ok = event(w, sent.id, "sent", { route: "backup" });
    for (const e of [d1, d2, ok]) expect(await recordEvent(w.outcomeDeps, e)).toBe(true);
    // Redeliveries change nothing (deferrals are counted once each).
    for (const e of [d1, d2, ok]) expect(await recordEvent(w.outcomeDeps, e)).toBe(false);

    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("DELIVERED");
    expect(record.outcomes).toMatchObject({
      route: "backup",
      deliveredRoute: "backup",
      deferrals: 2,
      lastDeferral: { at: d2.at, route: "primary", detail: "421 try later" },
      lastEvent: { type: "DELIVERED", at: ok.at },
    });
    expect(record.outcomes?.confirmed).toBeUndefined();
  });

  it("records the route of a bounce and of a final failure", async () => {
    const w = await buildTestWorld();
    const a = await w.service.send(WS, email);
    const b = await w.service.send(WS, email);
    await recordEvent(w.outcomeDeps, event(w, a.id, "bounced", { route: "ses", permanent: true, smtpCode: 550 }));
    await recordEvent(w.outcomeDeps, event(w, b.id, "failed", { route: "direct", detail: "no MX" }));
    expect((await w.service.get(WS, a.id)).outcomes).toMatchObject({ route: "ses", bouncedRoute: "ses", bounceType: "hard" });
    expect((await w.service.get(WS, b.id))).toMatchObject({ status: "FAILED", outcomes: { route: "direct", failedRoute: "direct" } });
  });

  it("keeps a provider's DELIVERED as a confirmation: no status change, no stats, no new latest event", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email);
    const day = w.clock.now().toISOString().slice(0, 10);
    const ok = event(w, sent.id, "sent", { route: "ses" });
    await recordEvent(w.outcomeDeps, ok);
    const open = event(w, sent.id, "opened");
    await recordEvent(w.outcomeDeps, open);
    w.clock.advance(5_000);
    const confirmed = event(w, sent.id, "confirmed", { route: "ses" });
    expect(await recordEvent(w.outcomeDeps, confirmed)).toBe(true);
    expect(await recordEvent(w.outcomeDeps, confirmed)).toBe(false);
    // The provider may report twice (another notification id): still one delivery.
    expect(await recordEvent(w.outcomeDeps, event(w, sent.id, "confirmed", { route: "ses" }))).toBe(true);

    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("DELIVERED");
    expect(record.outcomes).toMatchObject({
      deliveredAt: ok.at,
      deliveredRoute: "ses",
      route: "ses",
      lastEvent: { type: "OPENED", at: open.at },
      confirmed: { route: "ses" },
    });
    const stats = await w.service.stats(WS, { from: day, to: day });
    expect(stats.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1 });
  });

  it("a provider's DELIVERED of a failed email leaves it failed", async () => {
    const w = await buildTestWorld();
    const sent = await w.service.send(WS, email);
    await recordEvent(w.outcomeDeps, event(w, sent.id, "failed", { route: "primary" }));
    await recordEvent(w.outcomeDeps, event(w, sent.id, "confirmed", { route: "primary" }));
    const record = await w.service.get(WS, sent.id);
    expect(record.status).toBe("FAILED");
    expect(record.outcomes?.deliveredAt).toBeUndefined();
    expect(record.outcomes?.confirmed?.route).toBe("primary");
  });

  it("decodes MAIL_EVENT_TYPE_DELIVERED and the route of a MailEvent", () => {
    const at = new Date("2030-01-01T00:00:00Z");
    const decoded = outcomeEventOf(create(MailEventSchema, {
      eventId: "evt_1", type: MailEventType.DELIVERED, source: DeliverySource.TRANSACTIONAL, emailId: "trs_1", route: "ses", occurredAt: timestampFromDate(at),
    }), new Date());
    expect(decoded).toMatchObject({ kind: "confirmed", route: "ses", emailId: "trs_1", at });
    const sent = outcomeEventOf(create(MailEventSchema, { eventId: "evt_2", type: MailEventType.SENT, emailId: "trs_1" }), at);
    expect(sent).toMatchObject({ kind: "sent" });
    expect(sent?.route).toBeUndefined();
  });
});
