import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { verifyClientSignature } from "../webhooks/verify.js";

const KEY = "mr_test_outcomes_key_1";
const OTHER_KEY = "mr_test_outcomes_other_1";
const TOKEN = "receiver-shared-secret";

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on loopback that records every request and answers 200. */
async function startReceiver() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks`, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Polls `read` until `done` holds (or fails with the last value). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value).slice(0, 1500)}`);
    await new Promise((r) => setTimeout(r, 200));
    value = await read();
  }
  return value;
}

/** Real opens and clicks on the links of a message the SMTP sink received, counted once each, seen through the API and webhooks. */
describe("every outcome visible", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let nc: NatsConnection;

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          {
            id: "ws_outcomes", name: "Outcomes", timezone: "UTC",
            apiKeys: [{ key: KEY, scopes: ["api_user"] }],
            verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
            flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
            monthlyLimit: 1000, sendingAccountNew: false,
          },
          { id: "ws_outcomes_other", name: "Other", timezone: "UTC", apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }] },
        ],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "webhooks", "gateway"],
    });
    nc = await connect({ servers: sys.nats.url });
  }, 180_000);
  afterAll(async () => {
    await nc?.close();
    await sys?.stop();
    await receiver?.close();
  });

  it("counts opens and clicks of real links once each, in the email, the stats and signed webhooks", async () => {
    const created = await sys.api("POST", "/v1/webhooks", {
      key: KEY,
      body: { url: receiver.url, events: ["EMAIL_SENT", "EMAIL_OPENED", "EMAIL_CLICKED"], token: TOKEN },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const webhook = created.body.webhook;
    expect(webhook).toMatchObject({ url: receiver.url, token: TOKEN, status: "ACTIVE" });
    expect((await sys.api("GET", `/v1/webhooks/${webhook.id}`, { key: OTHER_KEY })).status).toBe(404);
    expect((await sys.api("GET", "/v1/webhooks", { key: KEY })).body.webhooks.map((w: { id: string }) => w.id)).toEqual([webhook.id]);

    const sent = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: {
        from: "Acme <team@acme.test>", to: "ann@example.test", subject: "Your plan", groupBy: "onboarding",
        html: '<p>Hello Ann, <a href="https://acme.test/pricing?plan=pro">see the plans</a>.</p>',
        settings: { trackOpens: true, trackClicks: true },
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.email.id;

    const [msg] = await sys.sink!.waitFor(1, 30_000).catch(async (err) => {
      throw new Error(`${err.message}\n--- delivery log ---\n${await sys.log("delivery")}`);
    });
    const html = (await PostalMime.parse(msg.raw)).html ?? "";
    const pixel = /src="([^"]*\/t\/o\/[^"]+)"/.exec(html)?.[1];
    const click = /href="([^"]*\/t\/c\/[^"]+)"/.exec(html)?.[1];
    expect(pixel, html).toBeDefined();
    expect(click, html).toBeDefined();

    // Two opens a second apart (reloads within one second are one event), one click.
    expect((await fetch(pixel!)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await fetch(pixel!)).status).toBe(200);
    const redirect = await fetch(click!, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("https://acme.test/pricing?plan=pro");

    const email = await until(
      async () => (await sys.api("GET", `/v1/emails/${id}`, { key: KEY })).body.email,
      // Counters, milestones and the status are separate writes: wait for all of them.
      (e) => e.status === "DELIVERED" && e.opens === 2 && e.clicks === 1 && e.events?.deliveredAt && e.openedAt && e.clickedAt,
    );
    expect(email).toMatchObject({
      id, status: "DELIVERED", groupBy: "onboarding", opens: 2, clicks: 1,
      openedAt: expect.any(String), clickedAt: expect.any(String),
      links: [{ url: "https://acme.test/pricing?plan=pro", clicks: 1, lastClickedAt: expect.any(String) }],
      events: { deliveredAt: expect.any(String) },
      lastEvent: { type: expect.stringMatching(/^(CLICKED|OPENED|DELIVERED)$/) },
    });

    // The same open event published again (a republish after the dedup window): counted once.
    const js = jetstream(nc);
    const replay = create(MailEventSchema, {
      eventId: "evt_replayed_open", type: MailEventType.OPENED, workspaceId: "ws_outcomes", source: DeliverySource.TRANSACTIONAL,
      emailId: id, recipient: "ann@example.test", occurredAt: timestampNow(),
    });
    await js.publish("mail.events.transactional.opened", toBinary(MailEventSchema, replay), { msgID: "replay-1" });
    await js.publish("mail.events.transactional.opened", toBinary(MailEventSchema, replay), { msgID: "replay-2" });
    const afterReplay = await until(async () => (await sys.api("GET", `/v1/emails/${id}`, { key: KEY })).body.email, (e) => e.opens >= 3);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await sys.api("GET", `/v1/emails/${id}`, { key: KEY })).body.email.opens).toBe(afterReplay.opens);
    expect(afterReplay.opens).toBe(3);

    const stats = await until(
      () => sys.api("GET", "/v1/stats/emails?groupBy=onboarding", { key: KEY }),
      (s) => s.status !== 200 || (s.body.stats.totals.opens === 3 && s.body.stats.totals.clicks === 1 && s.body.stats.totals.delivered === 1),
    );
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    expect(stats.body.stats.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1, clicked: 1, opens: 3, clicks: 1, rates: { delivered: 1, opened: 1, clicked: 1 } });
    const today = new Date().toISOString().slice(0, 10);
    expect(stats.body.stats.days.at(-1)).toMatchObject({ date: today, sent: 1 });
    expect(stats.body.stats.groups).toEqual([expect.objectContaining({ groupBy: "onboarding", sent: 1 })]);
    const other = await sys.api("GET", "/v1/stats/emails", { key: OTHER_KEY });
    expect(other.body.stats.totals.sent).toBe(0);

    // The receiver got each kind, signed as the official client verifies it.
    const deliveries = await until(async () => receiver.received.map((r) => ({ ...r, event: JSON.parse(r.body) })), (list) => {
      const types = new Set(list.map((d) => d.event.type));
      return types.has("EMAIL_SENT") && types.has("EMAIL_OPENED") && types.has("EMAIL_CLICKED");
    });
    for (const d of deliveries) {
      expect(verifyClientSignature(d.body, String(d.headers["x-smashsend-signature"]), TOKEN), d.body).toBe(true);
      expect(verifyClientSignature(d.body, String(d.headers["x-smashsend-signature"]), "another-secret")).toBe(false);
      expect(d.event).toMatchObject({ workspaceId: "ws_outcomes", data: { emailId: id } });
    }
    expect(deliveries.find((d) => d.event.type === "EMAIL_CLICKED")!.event.data.url).toBe("https://acme.test/pricing?plan=pro");

    const history = await sys.api("GET", `/v1/webhooks/${webhook.id}/deliveries`, { key: KEY });
    expect(history.body.deliveries.some((d: { state: string; lastAttempt?: { statusCode: number } }) => d.state === "SUCCEEDED" && d.lastAttempt?.statusCode === 200)).toBe(true);
  }, 120_000);

  it("sends a test event on demand and redelivers one, through the public routes", async () => {
    const created = await sys.api("POST", "/v1/webhooks", { key: KEY, body: { url: receiver.url, events: ["CONTACT_CREATED"] } });
    const webhook = created.body.webhook;
    expect(webhook.token).toMatch(/^whsec_/);
    const before = receiver.received.length;
    const test = await sys.api("POST", `/v1/webhooks/${webhook.id}/test`, { key: KEY });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const testing = await until(async () => receiver.received.slice(before).filter((r) => JSON.parse(r.body).type === "TESTING_CONNECTION"), (l) => l.length === 1);
    expect(verifyClientSignature(testing[0].body, String(testing[0].headers["x-smashsend-signature"]), webhook.token)).toBe(true);

    const settled = await until(async () => (await sys.api("GET", `/v1/webhooks/${webhook.id}/deliveries`, { key: KEY })).body.deliveries, (l) => l[0]?.state === "SUCCEEDED");
    const again = await sys.api("POST", `/v1/webhooks/${webhook.id}/deliveries/${settled[0].id}/redeliver`, { key: KEY });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const both = await until(async () => receiver.received.slice(before).filter((r) => JSON.parse(r.body).type === "TESTING_CONNECTION"), (l) => l.length === 2);
    expect(both[1].body).toBe(both[0].body);
    expect(both[1].headers["webhook-id"]).toBe(both[0].headers["webhook-id"]);

    const updated = await sys.api("POST", `/v1/webhooks/${webhook.id}`, { key: KEY, body: { status: "PAUSED" } });
    expect(updated.body.webhook.status).toBe("PAUSED");
    expect((await sys.api("POST", `/v1/webhooks/${webhook.id}/test`, { key: KEY })).body).toMatchObject({ statusCode: 409, code: "webhook_not_active" });
    const deleted = await sys.api("DELETE", `/v1/webhooks/${webhook.id}`, { key: KEY, headers: { "content-type": "application/json" } });
    expect(deleted.body).toMatchObject({ isDeleted: true, webhook: { id: webhook.id } });
    expect((await sys.api("GET", `/v1/webhooks/${webhook.id}`, { key: KEY })).body).toMatchObject({ statusCode: 404, code: "webhook_not_found" });
  }, 60_000);
});
