/**
 * The webhooks unit end to end: a real nats-server, the unit started in-process with its
 * real adapters (embedded store on disk, NATS, fetch), a Connect client, and real HTTP
 * receivers on 127.0.0.1 that check both signatures with independent verifiers.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { jetstream } from "@nats-io/jetstream";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { connectClient, connectNats, createLogger, errorInfoOf, loadConfig, publishProto, type NatsConnection } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { startWebhooks, type RunningWebhooks } from "../../services/webhooks/src/main.js";
import { loadWebhooksSettings } from "../../services/webhooks/src/settings.js";
import { WebhookService, WebhookStatus, DeliveryState, WebhookEventsSchema } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { DeliverySource, MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { NatsChangeFeed, type WebhookChange } from "../../services/webhooks/src/adapters/change-feed.js";
import { verifyClientSignature, verifyStandardWebhook } from "./verify.js";

interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url: string;
  received: Received[];
  /** Decides the answer of the n-th request (0-based); may wait. */
  answer: (n: number) => Promise<number> | number;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startReceiver(answer: Receiver["answer"] = () => 200): Promise<Receiver> {
  const receiver = { received: [] as Received[], answer } as Receiver;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const n = receiver.received.length;
      receiver.received.push({ at: Date.now(), headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const status = await receiver.answer(n);
      res.writeHead(status).end(status >= 300 ? "receiver says no" : "ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });
  return receiver;
}

type Truthy<T> = Exclude<T, undefined | null | false | 0 | "">;

async function waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 10_000): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

let nats: NatsHandle;
let nc: NatsConnection;
let unit: RunningWebhooks;
let dataDir: string;
let client: ReturnType<typeof connectClient<typeof WebhookService>>;
const receivers: Receiver[] = [];
let eventSeq = 0;

beforeAll(async () => {
  nats = await startNats();
  dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-webhooks-"));
  const env = {
    MAILROOM_NATS_URL: nats.url,
    MAILROOM_DATA_DIR: dataDir,
    MAILROOM_SERVICE_PORT: "0",
    // Short schedule and pause rule so the suite sees retries and a pause in seconds:
    // retries after 100 ms, 600 ms, 2.4 s …; paused after ≥ 3 failures over ≥ 1.5 s.
    MAILROOM_WEBHOOKS_RETRY_BASE_MS: "100",
    MAILROOM_WEBHOOKS_PAUSE_AFTER_MS: "1500",
    MAILROOM_WEBHOOKS_PAUSE_MIN_FAILURES: "3",
    MAILROOM_WEBHOOKS_POLL_MS: "50",
    MAILROOM_WEBHOOKS_TIMEOUT_MS: "5000",
    // The receivers listen on 127.0.0.1: trusted explicitly (test/webhooks/ssrf.test.ts checks the refusals).
    MAILROOM_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8,::1/128",
  };
  unit = await startWebhooks(loadConfig(env), loadWebhooksSettings(env), createLogger("webhooks", "warn"));
  client = connectClient(WebhookService, unit.url);
  nc = await connectNats(nats.url, "webhooks-test");
  await ensureMailStreams(nc);
});

afterAll(async () => {
  await unit?.stop();
  await nc?.drain();
  await Promise.all(receivers.map((r) => r.close()));
  await nats?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function receiver(answer?: Receiver["answer"]) {
  const r = await startReceiver(answer);
  receivers.push(r);
  return r;
}

function mailEvent(workspaceId: string, type: MailEventType, overrides: MessageInitShape<typeof MailEventSchema> = {}): MailEvent {
  eventSeq++;
  return create(MailEventSchema, {
    eventId: `evt_test_${eventSeq}_${Date.now()}`,
    type,
    workspaceId,
    source: DeliverySource.TRANSACTIONAL,
    deliveryId: `trs_${eventSeq}`,
    emailId: `trs_${eventSeq}`,
    messageId: `m${eventSeq}@acme.test`,
    recipient: "ada@example.test",
    smtpCode: 250,
    detail: "250 2.0.0 queued",
    attempt: 1,
    occurredAt: timestampFromDate(new Date()),
    ...overrides,
  });
}

const SUBJECT: Partial<Record<MailEventType, string>> = {
  [MailEventType.SENT]: "sent",
  [MailEventType.BOUNCED]: "bounced",
  [MailEventType.OPENED]: "opened",
};

async function publish(event: MailEvent, msgID = event.eventId) {
  await publishProto(jetstream(nc), `mail.events.transactional.${SUBJECT[event.type]}`, MailEventSchema, event, msgID);
}

describe("webhooks unit", () => {
  it("delivers a MailEvent to its subscribers, signed for the official client and for Standard Webhooks", async () => {
    const [a, b, other] = await Promise.all([receiver(), receiver(), receiver()]);
    const generated = (await client.createWebhook({ workspaceId: "ws_sig", url: a.url, events: ["EMAIL_DELIVERED"] })).webhook!;
    const custom = (await client.createWebhook({ workspaceId: "ws_sig", url: b.url, events: ["EMAIL_DELIVERED"], token: "a token the caller chose" })).webhook!;
    await client.createWebhook({ workspaceId: "ws_sig", url: other.url, events: ["EMAIL_BOUNCED"] });
    expect(generated.token).toMatch(/^whsec_/);
    expect(custom.token).toBe("a token the caller chose");

    const event = mailEvent("ws_sig", MailEventType.SENT);
    await publish(event);
    await waitFor("both deliveries", () => a.received.length === 1 && b.received.length === 1);

    for (const [r, token, swSecret] of [
      [a, generated.token, generated.token],
      // A token not of the whsec_ form keys Standard Webhooks with its UTF-8 bytes.
      [b, custom.token, `whsec_${Buffer.from(custom.token).toString("base64")}`],
    ] as const) {
      const got = r.received[0];
      expect(verifyClientSignature(got.body, got.headers["x-smashsend-signature"] as string, token)).toBe(true);
      expect(verifyStandardWebhook(got.body, got.headers, swSecret)).toBe(true);
      // A tampered body fails both.
      expect(verifyClientSignature(got.body + " ", got.headers["x-smashsend-signature"] as string, token)).toBe(false);
      expect(verifyStandardWebhook(got.body + " ", got.headers, swSecret)).toBe(false);
      expect(got.headers["content-type"]).toBe("application/json");
      expect(got.headers["user-agent"]).toBe("Mailroom-Webhooks/1");
      expect(got.headers["webhook-id"]).toMatch(/^whd_/);
      expect(JSON.parse(got.body)).toEqual({
        id: event.eventId,
        type: "EMAIL_DELIVERED",
        createdAt: new Date(Number(event.occurredAt!.seconds) * 1000 + event.occurredAt!.nanos / 1e6).toISOString(),
        workspaceId: "ws_sig",
        data: {
          source: "transactional",
          emailId: event.emailId,
          messageId: event.messageId,
          to: "ada@example.test",
          smtpCode: 250,
          detail: "250 2.0.0 queued",
          attempt: 1,
        },
      });
    }
    await sleep(200);
    expect(other.received).toHaveLength(0);
  });

  it("never delivers one event twice to an endpoint, however often it is published", async () => {
    const r = await receiver();
    await client.createWebhook({ workspaceId: "ws_dup", url: r.url, events: ["EMAIL_DELIVERED"] });
    const event = mailEvent("ws_dup", MailEventType.SENT);
    await publish(event);
    // Past JetStream's msgID dedupe: the same event as a new stream message (a replay).
    await publish(event, `${event.eventId}-replayed`);
    await waitFor("the delivery", () => r.received.length >= 1);
    await publish(event, `${event.eventId}-replayed-again`);
    await sleep(700);
    expect(r.received).toHaveLength(1);
  });

  it("retries a failing receiver until it recovers, with the same id and body", async () => {
    const r = await receiver((n) => (n < 2 ? 500 : 200));
    const w = (await client.createWebhook({ workspaceId: "ws_retry", url: r.url, events: ["EMAIL_BOUNCED"] })).webhook!;
    await publish(mailEvent("ws_retry", MailEventType.BOUNCED, { smtpCode: 550, detail: "550 5.1.1 no such user" }));
    await waitFor("three attempts", () => r.received.length === 3);
    expect(new Set(r.received.map((x) => x.headers["webhook-id"])).size).toBe(1);
    expect(new Set(r.received.map((x) => x.body)).size).toBe(1);
    // 100 ms then 600 ms (±10 %) between attempts.
    expect(r.received[1].at - r.received[0].at).toBeGreaterThanOrEqual(80);
    expect(r.received[2].at - r.received[1].at).toBeGreaterThanOrEqual(500);
    for (const got of r.received) expect(verifyStandardWebhook(got.body, got.headers, w.token)).toBe(true);

    const delivery = await waitFor("the delivery to be recorded", async () => {
      const [d] = (await client.listDeliveries({ workspaceId: "ws_retry", webhookId: w.id })).deliveries;
      return d?.state === DeliveryState.SUCCEEDED ? d : undefined;
    });
    expect(delivery.eventType).toBe("EMAIL_BOUNCED");
    expect(delivery.attempts).toBe(3);
    expect(delivery.history.map((a) => a.statusCode)).toEqual([500, 500, 200]);
    expect(delivery.history[0].error).toContain("HTTP 500");
    await sleep(300);
    expect(r.received).toHaveLength(3);
  });

  it("a slow endpoint (3 s per answer) does not delay another endpoint's deliveries", async () => {
    const slow = await receiver(async () => {
      await sleep(3_000);
      return 200;
    });
    const fast = await receiver();
    await client.createWebhook({ workspaceId: "ws_slow", url: slow.url, events: ["EMAIL_OPENED"] });
    await client.createWebhook({ workspaceId: "ws_slow", url: fast.url, events: ["EMAIL_OPENED"] });
    const started = Date.now();
    // More events than the slow endpoint's four slots.
    for (let i = 0; i < 8; i++) await publish(mailEvent("ws_slow", MailEventType.OPENED));
    await waitFor("every fast delivery", () => fast.received.length === 8, 2_500);
    expect(Date.now() - started).toBeLessThan(2_500);
    // The slow endpoint holds at most 4 requests at once.
    expect(slow.received.length).toBeLessThanOrEqual(4);
  });

  it("pauses an endpoint whose attempts keep failing, holds its deliveries, and resumes them on ACTIVE", async () => {
    let healthy = false;
    const r = await receiver(() => (healthy ? 200 : 503));
    const w = (await client.createWebhook({ workspaceId: "ws_pause", url: r.url, events: ["EMAIL_DELIVERED"] })).webhook!;
    await publish(mailEvent("ws_pause", MailEventType.SENT));
    const paused = await waitFor(
      "the pause",
      async () => {
        const got = (await client.getWebhook({ workspaceId: "ws_pause", id: w.id })).webhook!;
        return got.status === WebhookStatus.PAUSED ? got : undefined;
      },
      10_000,
    );
    expect(paused.pausedReason).toMatch(/^Paused automatically: \d+ delivery attempts in a row failed since .*HTTP 503/);
    const listed = (await client.listWebhooks({ workspaceId: "ws_pause" })).webhooks;
    expect(listed.map((x) => [x.id, x.status])).toEqual([[w.id, WebhookStatus.PAUSED]]);

    // Nothing more reaches it while paused, not even new events.
    const attemptsWhenPaused = r.received.length;
    await publish(mailEvent("ws_pause", MailEventType.SENT));
    await sleep(800);
    expect(r.received.length).toBe(attemptsWhenPaused);
    const held = (await client.listDeliveries({ workspaceId: "ws_pause", webhookId: w.id })).deliveries;
    expect(held.map((d) => d.state)).toEqual([DeliveryState.HELD]);

    healthy = true;
    const resumed = (await client.updateWebhook({ workspaceId: "ws_pause", id: w.id, status: WebhookStatus.ACTIVE })).webhook!;
    expect([resumed.status, resumed.pausedReason]).toEqual([WebhookStatus.ACTIVE, ""]);
    await waitFor("the held delivery", async () => {
      const ds = (await client.listDeliveries({ workspaceId: "ws_pause", webhookId: w.id })).deliveries;
      return ds.length === 1 && ds[0].state === DeliveryState.SUCCEEDED;
    });
    expect(r.received.length).toBe(attemptsWhenPaused + 1);
  });

  it("SendTestEvent delivers TESTING_CONNECTION, and a delivery can be sent again", async () => {
    const r = await receiver();
    const w = (await client.createWebhook({ workspaceId: "ws_test", url: r.url, events: ["CONTACT_CREATED"], displayName: "CRM" })).webhook!;
    const delivery = (await client.sendTestEvent({ workspaceId: "ws_test", id: w.id })).delivery!;
    await waitFor("the test event", () => r.received.length === 1);
    const body = JSON.parse(r.received[0].body);
    expect(body).toMatchObject({ type: "TESTING_CONNECTION", workspaceId: "ws_test", id: delivery.eventId });
    expect(verifyClientSignature(r.received[0].body, r.received[0].headers["x-smashsend-signature"] as string, w.token)).toBe(true);

    await waitFor("the record", async () => (await client.listDeliveries({ workspaceId: "ws_test", webhookId: w.id })).deliveries[0]?.state === DeliveryState.SUCCEEDED);
    await client.redeliverDelivery({ workspaceId: "ws_test", webhookId: w.id, deliveryId: delivery.id });
    await waitFor("the redelivery", () => r.received.length === 2);
    expect(r.received[1].body).toBe(r.received[0].body);
    expect(r.received[1].headers["webhook-id"]).toBe(delivery.id);
  });

  it("answers the Connect API with the domain's error codes", async () => {
    const r = await receiver();
    const w = (await client.createWebhook({ workspaceId: "ws_api", url: r.url, events: ["EMAIL_DELIVERED"] })).webhook!;
    const codeOf = async (p: Promise<unknown>) => {
      try {
        await p;
        return "ok";
      } catch (err) {
        expect(err).toBeInstanceOf(ConnectError);
        return `${Code[(err as ConnectError).code]}/${errorInfoOf(err)?.code}`;
      }
    };
    expect(await codeOf(client.getWebhook({ workspaceId: "ws_other", id: w.id }))).toBe("NotFound/webhook_not_found");
    expect(await codeOf(client.deleteWebhook({ workspaceId: "ws_other", id: w.id }))).toBe("NotFound/webhook_not_found");
    expect(await codeOf(client.createWebhook({ workspaceId: "ws_api", url: r.url, events: ["EMAIL_DELIVERED", "EMAIL_TELEPORTED"] }))).toBe(
      "InvalidArgument/invalid_payload",
    );
    expect(await codeOf(client.createWebhook({ workspaceId: "ws_api", url: "https://u:p@acme.test/", events: ["EMAIL_DELIVERED"] }))).toBe(
      "InvalidArgument/invalid_payload",
    );
    const updated = await client.updateWebhook({
      workspaceId: "ws_api",
      id: w.id,
      events: create(WebhookEventsSchema, { names: ["EMAIL_DELIVERED", "EMAIL_CLICKED"] }),
    });
    expect(updated.webhook!.events).toEqual(["EMAIL_DELIVERED", "EMAIL_CLICKED"]);
    expect(updated.webhook!.token).toBe(w.token);
    const deleted = await client.deleteWebhook({ workspaceId: "ws_api", id: w.id });
    expect([deleted.webhook!.id, deleted.isDeleted]).toEqual([w.id, true]);
    expect(await codeOf(client.getWebhook({ workspaceId: "ws_api", id: w.id }))).toBe("NotFound/webhook_not_found");
  });

  it("announces webhook changes to the other processes over NATS (their caches drop the entries)", async () => {
    const logger = createLogger("webhooks", "silent");
    const [p1, p2] = [new NatsChangeFeed(nc, "p1", logger), new NatsChangeFeed(nc, "p2", logger)];
    const seen: Record<string, WebhookChange[]> = { p1: [], p2: [] };
    const subs = [p1.subscribe((c) => seen.p1.push(c)), p2.subscribe((c) => seen.p2.push(c))];
    p1.publish({ workspaceId: "ws_feed", webhookId: "wh_1" });
    await nc.flush();
    await waitFor("the announcement", () => seen.p2.length === 1);
    expect(seen.p2[0]).toEqual({ workspaceId: "ws_feed", webhookId: "wh_1", origin: "p1" });
    expect(seen.p1).toEqual([]); // its own change: already dropped locally
    subs.forEach((s) => s.unsubscribe());
  });
});
