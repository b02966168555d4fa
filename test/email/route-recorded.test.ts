import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { connectClient } from "@mailroom/kit/connect.js";
import { DeliverySource, MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * DESIGN §9.7 end to end: the route delivery names on its SENT event is recorded on the email,
 * and a relay provider's reports (real MailEvents on the real stream, as the inbound unit
 * publishes them) add to its timeline: DELIVERED confirms without a second EMAIL_DELIVERED
 * webhook or a second delivery in the stats; a later bounce fails the email and names its route.
 */
const KEY = "mr_test_route_recorded_1";
const WS = "ws_route_recorded";

async function startReceiver() {
  const received: Array<{ type: string; data: Record<string, unknown> }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks`, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v)).slice(0, 1500)}`);
    await new Promise((r) => setTimeout(r, 200));
    value = await read();
  }
  return value;
}

describe("the delivery route and a relay provider's reports on the email", () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let email: ReturnType<typeof connectClient<typeof EmailService>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: WS, name: "Routes", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "webhooks", "gateway"],
    });
    nc = await connect({ servers: sys.nats.url });
    email = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
  }, 180_000);
  afterAll(async () => {
    await nc?.close();
    await sys?.stop();
    await receiver?.close();
  });

  it("records the route that carried it; a provider's DELIVERED confirms once, a provider's bounce fails it", async () => {
    const hook = await sys.api("POST", "/v1/webhooks", { key: KEY, body: { url: receiver.url, events: ["EMAIL_DELIVERED", "EMAIL_BOUNCED"] } });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const sent = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "team@acme.test", to: "ann@example.test", subject: "Routes", html: "<p>Hello</p>" },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.email.id as string;
    await sys.sink!.waitFor(1, 30_000);

    const read = async () => (await email.getEmail({ workspaceId: WS, id })).email!;
    // The single relay of MAILROOM_SMTP_URL is the route "default".
    const delivered = await until(read, (e) => e.status === EmailStatus.DELIVERED && Boolean(e.outcomes?.deliveredRoute));
    expect(delivered.outcomes).toMatchObject({ route: "default", deliveredRoute: "default" });
    expect(delivered.outcomes?.confirmedAt).toBeUndefined();
    await until(async () => receiver.received.filter((r) => r.type === "EMAIL_DELIVERED"), (l) => l.length === 1);

    // The provider's confirmation, as inbound publishes it, delivered twice by the stream.
    const js = jetstream(nc);
    const publish = async (event: MailEvent, msgID: string) =>
      js.publish(`mail.events.transactional.${MailEventType[event.type].toLowerCase()}`, toBinary(MailEventSchema, event), { msgID });
    const confirmation = create(MailEventSchema, {
      eventId: `evt_provider_delivered_${id}`, type: MailEventType.DELIVERED, source: DeliverySource.TRANSACTIONAL, workspaceId: WS,
      emailId: id, deliveryId: id, recipient: "ann@example.test", route: "default", occurredAt: timestampNow(), detail: "ses: Delivery",
    });
    await publish(confirmation, "confirm-1");
    await publish(confirmation, "confirm-2");
    const confirmed = await until(read, (e) => e.outcomes?.confirmedAt !== undefined);
    expect(confirmed.status).toBe(EmailStatus.DELIVERED);
    expect(confirmed.outcomes).toMatchObject({ confirmedRoute: "default", lastEvent: "DELIVERED", deliveredAt: delivered.outcomes!.deliveredAt });

    // The public record is unchanged by routes (the spec has no place for them).
    const pub = (await sys.api("GET", `/v1/emails/${id}`, { key: KEY })).body.email;
    expect(JSON.stringify(pub)).not.toMatch(/"\w*(route|Route|confirmed|Confirmed|deferr)\w*":/);
    expect(pub.lastEvent.type).toBe("DELIVERED");

    // A bounce the provider reports later fails it, with its route; one EMAIL_BOUNCED.
    await publish(create(MailEventSchema, {
      eventId: `evt_provider_bounced_${id}`, type: MailEventType.BOUNCED, source: DeliverySource.TRANSACTIONAL, workspaceId: WS,
      emailId: id, deliveryId: id, recipient: "ann@example.test", route: "default", permanent: true, occurredAt: timestampNow(), detail: "ses: Permanent General",
    }), "bounce-1");
    // The status changes first, the bounce's milestone (route, type) right after it: wait for both.
    const bounced = await until(read, (e) => e.status === EmailStatus.FAILED && Boolean(e.outcomes?.bouncedRoute) && Boolean(e.outcomes?.bounceType));
    expect(bounced.outcomes).toMatchObject({ bouncedRoute: "default", bounceType: "hard", confirmedRoute: "default" });
    await until(async () => receiver.received.filter((r) => r.type === "EMAIL_BOUNCED"), (l) => l.length === 1);

    // Long enough for a second EMAIL_DELIVERED or a second count to show up: none does.
    await new Promise((r) => setTimeout(r, 5_000));
    expect(receiver.received.filter((r) => r.type === "EMAIL_DELIVERED")).toHaveLength(1);
    expect(receiver.received.filter((r) => r.type === "EMAIL_BOUNCED")).toHaveLength(1);
    const stats = await sys.api("GET", "/v1/stats/emails", { key: KEY });
    expect(stats.body.stats.totals).toMatchObject({ sent: 1, delivered: 1, bounced: 1 });
  }, 120_000);
});
