import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { WebhookEventSchema } from "@mailroom/proto/events/v1/events_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { verifyClientSignature, verifyStandardWebhook } from "./verify.js";
import { startReceiver, type Received } from "./receiver.js";

/**
 * DESIGN §9.2's producers of EMAIL_SENT (the email service, at acceptance), EMAIL_DELIVERED
 * (the next hop's 250), BROADCAST_STARTED and BROADCAST_COMPLETED (the broadcast service),
 * through the public API: every unit as a real process, a real nats-server, the SMTP sink and
 * a signed-webhook receiver on loopback. Each event arrives once, even when its JetStream
 * message is published again past the stream's deduplication.
 */

const KEY = "mr_test_producers_1";
const TOKEN = "producers-receiver-secret";
const WS = "ws_producers";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last value: ${JSON.stringify(value).slice(0, 1500)}`);
    await sleep(100);
    value = await read();
  }
  return value;
}

const person = (email: string, firstName: string) => ({ email, firstName, subscribed: true });

describe("webhook producers: EMAIL_SENT, EMAIL_DELIVERED, BROADCAST_STARTED, BROADCAST_COMPLETED", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let nc: NatsConnection;
  let webhookToken = "";
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });
  const ofType = (type: string, match: (r: Received) => boolean = () => true) => receiver.received.filter((r) => r.event.type === type && match(r));

  /** Publishes a WebhookEvent again under a new msgID, so the stream cannot drop it: the webhooks unit must. */
  async function republish(eventId: string, type: string, data: unknown) {
    const event = create(WebhookEventSchema, {
      eventId, type, workspaceId: WS, occurredAt: timestampNow(), dataJson: new TextEncoder().encode(JSON.stringify(data)),
    });
    await jetstream(nc).publish(`webhook.events.${type}`, toBinary(WebhookEventSchema, event), { msgID: `replay-${eventId}-${Date.now()}` });
  }

  function expectSigned(r: Received) {
    expect(verifyClientSignature(r.body, String(r.headers["x-smashsend-signature"]), webhookToken), r.body).toBe(true);
    expect(verifyClientSignature(r.body, String(r.headers["x-smashsend-signature"]), "another-secret")).toBe(false);
    expect(verifyStandardWebhook(r.body, r.headers, webhookToken)).toBe(false); // a chosen token is not a whsec_ secret
    expect(Object.keys(r.event).sort()).toEqual(["createdAt", "data", "id", "type", "workspaceId"]);
    expect(r.event.workspaceId).toBe(WS);
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          {
            id: WS, name: "Producers", timezone: "UTC",
            apiKeys: [{ key: KEY, scopes: ["api_user"] }],
            verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
            flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
            monthlyLimit: 1000, sendingAccountNew: false,
            contacts: [person("ann@example.test", "Ann"), person("bob@example.test", "Bob"), person("cid@example.test", "Cid")],
          },
        ],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "webhooks", "gateway"],
    });
    nc = await connect({ servers: sys.nats.url });
    const created = await api("POST", "/v1/webhooks", {
      url: receiver.url, events: ["EMAIL_SENT", "EMAIL_DELIVERED", "BROADCAST_STARTED", "BROADCAST_COMPLETED"], token: TOKEN,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    webhookToken = created.body.webhook.token;
    expect(webhookToken).toBe(TOKEN);
  }, 180_000);

  afterAll(async () => {
    await nc?.close();
    await sys?.stop();
    await receiver?.close();
  });

  it("one POST /v1/emails: EMAIL_SENT at acceptance, then EMAIL_DELIVERED at the 250, each once", async () => {
    const sent = await api("POST", "/v1/emails", { from: "Acme <team@acme.test>", to: "dora@example.test", subject: "Hello", html: "<p>Hi</p>", groupBy: "welcome" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.email.id as string;
    const mine = (r: Received) => r.event.data.emailId === id;

    await until("EMAIL_SENT and EMAIL_DELIVERED", () => [ofType("EMAIL_SENT", mine).length, ofType("EMAIL_DELIVERED", mine).length], ([s, d]) => s >= 1 && d >= 1);
    const email = await until("DELIVERED", async () => (await api("GET", `/v1/emails/${id}`)).body.email, (e) => e.status === "DELIVERED");
    expect(sys.sink!.messages.some((m) => m.to.includes("dora@example.test"))).toBe(true);

    const [s] = ofType("EMAIL_SENT", mine);
    const [d] = ofType("EMAIL_DELIVERED", mine);
    for (const r of [s, d]) expectSigned(r);
    expect(s.event.data).toEqual({ source: "transactional", emailId: id, messageId: email.messageId ?? expect.any(String), to: "dora@example.test", groupBy: "welcome" });
    expect(d.event.data).toMatchObject({ source: "transactional", emailId: id, to: "dora@example.test", smtpCode: 250, groupBy: "welcome" });
    expect(d.event.data.messageId).toBe(s.event.data.messageId);
    expect(s.event.id).not.toBe(d.event.id);
    // Accepted before delivered, and received in that order.
    expect(Date.parse(s.event.createdAt)).toBeLessThanOrEqual(Date.parse(d.event.createdAt));
    expect(receiver.received.indexOf(s)).toBeLessThan(receiver.received.indexOf(d));

    // The same EMAIL_SENT event published again past the stream's dedup: still one delivery.
    await republish(s.event.id, "EMAIL_SENT", s.event.data);
    await sleep(1_500);
    expect([ofType("EMAIL_SENT", mine).length, ofType("EMAIL_DELIVERED", mine).length]).toEqual([1, 1]);
  }, 90_000);

  it("a broadcast to three contacts: BROADCAST_STARTED then BROADCAST_COMPLETED with its counters, each once", async () => {
    const created = await api("POST", "/v1/broadcasts", {
      name: "News", subject: "News for {{firstName}}", fromEmail: "news@acme.test", fromName: "Acme", html: "<p>Hi {{firstName}}</p>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const mine = (r: Received) => r.event.data.broadcast?.id === id;
    const scheduled = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);

    const done = await until("COMPLETED", async () => (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast, (b) => b.status === "COMPLETED");
    await until("BROADCAST_STARTED and BROADCAST_COMPLETED", () => [ofType("BROADCAST_STARTED", mine).length, ofType("BROADCAST_COMPLETED", mine).length], ([s, c]) => s >= 1 && c >= 1);

    const [s] = ofType("BROADCAST_STARTED", mine);
    const [c] = ofType("BROADCAST_COMPLETED", mine);
    for (const r of [s, c]) expectSigned(r);
    expect(Object.keys(s.event.data)).toEqual(["broadcast"]);
    expect(s.event.data.broadcast).toMatchObject({ id, name: "News", status: "IN_PROGRESS", deliveryMethod: "ASAP", completedAt: null, sentAt: done.sentAt });
    expect(s.event.createdAt).toBe(done.sentAt);
    expect(c.event.createdAt).toBe(done.completedAt);
    // The completed broadcast as GET /v1/broadcasts/:id answers it, counters included — but for
    // `audienceCount`, which GET counts at the moment it is asked (the event has the recipients).
    expect(c.event.data.broadcast.progress).toMatchObject({ recipients: 3, released: 3, sent: 3, delivered: 3, failed: 0, bounced: 0 });
    const { audienceCount, ...asGot } = done;
    expect(audienceCount).toBe(3);
    expect(c.event.data.broadcast).toEqual({ ...asGot, progress: c.event.data.broadcast.progress, updatedAt: c.event.data.broadcast.updatedAt });
    expect(Object.keys(c.event.data.broadcast).sort()).toEqual(Object.keys(asGot).sort());
    expect(receiver.received.indexOf(s)).toBeLessThan(receiver.received.indexOf(c));

    // Both published again past the stream's dedup: the webhooks unit still sends each once.
    await republish(s.event.id, "BROADCAST_STARTED", s.event.data);
    await republish(c.event.id, "BROADCAST_COMPLETED", c.event.data);
    await sleep(1_500);
    expect([ofType("BROADCAST_STARTED", mine).length, ofType("BROADCAST_COMPLETED", mine).length]).toEqual([1, 1]);
    expect([s.event.id, c.event.id]).toEqual([`${id}.started`, `${id}.completed`]);
  }, 90_000);
});
