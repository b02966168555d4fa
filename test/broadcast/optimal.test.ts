import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import { BroadcastService } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { AudienceService, BestHourBasis } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { connectNats, publishProto } from "@mailroom/kit/jetstream.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * OPTIMAL through the public API (DESIGN §10.5), every unit a real process: contacts' opens
 * and clicks of past weeks arrive as MailEvents (as tracking publishes them), the audience
 * unit records them as engagement, and a broadcast scheduled OPTIMAL now sends at once to the
 * contacts whose best hour is the current one (and, as SMART, to those without history and
 * zone), and holds the others until their hour, each within 24 hours. The exact instants under
 * a fake clock: services/audience/src/domain/best-hour.test.ts and
 * services/broadcast/src/domain/optimal.test.ts.
 */

const WS = "ws_optimal";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const person = (email: string, firstName: string, extra: Record<string, unknown> = {}) => ({ email, firstName, subscribed: true, properties: {}, ...extra });

const bootstrap = {
  workspaces: [{
    id: WS, name: WS, timezone: "UTC",
    apiKeys: [{ key: `mr_test_${WS}_1`, scopes: ["api_user"] }],
    verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
    flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
    monthlyLimit: 100_000, sendingAccountNew: false,
    contacts: [
      person("now@example.test", "Now"), // opens at this hour of the week: now
      person("later@example.test", "Later"), // opens 5 hours later in the week: then
      person("thin@example.test", "Thin"), // 4 opens at this hour of the day (thin history): now
      person("edge@example.test", "Edge"), // opens an hour earlier in the week: tomorrow, 23 h on
      person("none@example.test", "None"), // no history, no zone: as SMART, now
      person("tokyo@example.test", "Taro", { timezone: "Asia/Tokyo" }), // no history: as SMART, 15 h on
    ],
  }],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("OPTIMAL broadcasts (real processes)", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: `mr_test_${WS}_1`, body });

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"] });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("sends each contact at its best hour from its engagement, those without history as SMART, nobody later than 24 hours", async () => {
    // The current hour must last the test: near its end, start in the next one.
    const left = HOUR - (Date.now() % HOUR);
    if (left < 120_000) await sleep(left + 1_000);
    const hour = Math.floor(Date.now() / HOUR) * HOUR;

    const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    const audiences = connectClient(AudienceService, `http://127.0.0.1:${sys.ports.audience}`);
    const idOf = async (email: string) => (await contacts.getContact({ workspaceId: WS, email })).contact!.id;
    const ids = Object.fromEntries(await Promise.all(["now", "later", "thin", "edge", "none", "tokyo"].map(async (n) => [n, await idOf(`${n}@example.test`)])));

    // Histories: 12 weekly opens (and a click each) for the week's hour; 4 daily for the thin one.
    const history: [string, number][] = [];
    for (let k = 1; k <= 12; k++) {
      history.push([ids.now, hour - k * WEEK + 5 * 60_000], [ids.later, hour + 5 * HOUR - k * WEEK + 9 * 60_000], [ids.edge, hour - HOUR - k * WEEK + 30 * 60_000]);
    }
    for (let d = 1; d <= 4; d++) history.push([ids.thin, hour - d * DAY + 10 * 60_000]);
    const nc = await connectNats(sys.nats.url, "optimal-test");
    try {
      const js = jetstream(nc);
      let n = 0;
      for (const [contactId, at] of history) {
        for (const type of [MailEventType.OPENED, MailEventType.CLICKED]) {
          if (type === MailEventType.CLICKED && contactId === ids.thin) continue;
          const eventId = `opt-hist-${n++}`;
          const kind = MailEventType[type].toLowerCase();
          await publishProto(js, `mail.events.transactional.${kind}`, MailEventSchema, create(MailEventSchema, {
            eventId, type, workspaceId: WS, source: DeliverySource.TRANSACTIONAL, emailId: `em_hist_${contactId}_${at}`, contactId,
            recipient: "x@example.test", occurredAt: timestampFromDate(new Date(at)),
          }), eventId);
        }
      }
    } finally {
      await nc.close();
    }

    // The audience unit's plan, once every event is recorded.
    const order = ["now", "later", "thin", "edge", "none", "tokyo"];
    const plan = async () => {
      const windowStart = Date.now();
      const res = await audiences.planBestHours({
        workspaceId: WS, windowStart: timestampFromDate(new Date(windowStart)), defaultTimeZone: "UTC", contactIds: order.map((n) => ids[n]), timeZones: order.map((n) => (n === "tokyo" ? "Asia/Tokyo" : "")),
      });
      return order.map((_, i) => ({ dueAt: res.dueInMs[i] < 0 ? 0 : windowStart + res.dueInMs[i], basis: BestHourBasis[res.basis[i]].toLowerCase(), events: res.events[i] }));
    };
    const deadline = Date.now() + 20_000;
    let plans = await plan();
    while (plans.map((p) => p.events).join() !== "24,24,4,24,0,0") {
      if (Date.now() > deadline) throw new Error(`engagement not recorded: ${JSON.stringify(plans.map((p) => p.events))}\n${await sys.log("audience")}`);
      await sleep(200);
      plans = await plan();
    }
    const now = Date.now();
    const byName = Object.fromEntries(order.map((n, i) => [n, { dueAt: plans[i].dueAt, basis: plans[i].basis }]));
    expect(byName.now).toEqual({ dueAt: expect.any(Number), basis: "week" });
    expect(byName.now.dueAt).toBeLessThanOrEqual(now); // inside its hour: at once
    expect(byName.later).toEqual({ dueAt: hour + 5 * HOUR, basis: "week" });
    expect(byName.thin.basis).toBe("day");
    expect(byName.thin.dueAt).toBeLessThanOrEqual(now);
    // Its week's hour is six days away; the best hour of its day is tomorrow's, within 24 hours.
    expect(byName.edge).toEqual({ dueAt: hour + 23 * HOUR, basis: "day" });
    expect(byName.none).toEqual({ dueAt: 0, basis: "none" });

    // Through the public API.
    const created = await api("POST", "/v1/broadcasts", {
      name: "Best hour", subject: "Best hour {{firstName}} #optimal", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<html><body><p>Hi {{firstName}}.</p></body></html>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const scheduled = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "OPTIMAL" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "OPTIMAL" });
    const sentTo = () => sys.sink!.messages.filter((m) => m.raw.includes("#optimal")).flatMap((m) => m.to).sort();
    const until = Date.now() + 30_000;
    while (sentTo().length < 3 && Date.now() < until) await sleep(100);
    await sleep(1_500);
    expect(sentTo()).toEqual(["none@example.test", "now@example.test", "thin@example.test"]);
    const b = (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
    expect(b).toMatchObject({ status: "IN_PROGRESS", deliveryMethod: "OPTIMAL", progress: { recipients: 6, released: 3 } });
    // Sending has started: too late to cancel.
    expect((await api("POST", `/v1/broadcasts/${id}/cancel`, {})).body.code).toBe("broadcast_not_cancellable");
    // The progress chart's planned curve: every recipient in the minute it is due.
    const timeline = await connectClient(BroadcastService, `http://127.0.0.1:${sys.ports.broadcast}`).getBroadcastTimeline({ workspaceId: WS, id });
    const planned = timeline.points.filter((p) => p.planned > 0n).map((p) => [p.at!.seconds * 1000n, p.planned]);
    expect(planned.reduce((n, [, c]) => n + c, 0n)).toBe(6n);
    expect(planned).toContainEqual([BigInt(hour + 5 * HOUR), 1n]);
    expect(planned).toContainEqual([BigInt(hour + 23 * HOUR), 1n]);
  }, 240_000);

  it("an OPTIMAL broadcast scheduled later can be cancelled; an unknown method is still refused with the list", async () => {
    const created = await api("POST", "/v1/broadcasts", {
      name: "Later", subject: "Later {{firstName}} #optimal-later", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<html><body><p>Hi {{firstName}}.</p></body></html>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const sendAt = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "OPTIMAL", sendAt })).body.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "OPTIMAL" });
    expect((await api("POST", `/v1/broadcasts/${id}/cancel`, {})).body.broadcast).toMatchObject({ status: "DRAFT" });
    const bad = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "BEST" });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_payload");
    expect(bad.body.message).toMatch(/ASAP.*PROGRESSIVE.*SMART.*WARMUP.*OPTIMAL/);
  });
});
