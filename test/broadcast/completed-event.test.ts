/**
 * BROADCAST_COMPLETED survives a broadcast process that stops between the COMPLETED status
 * write and the publish (issue 26): the status write marks the event unannounced, and after a
 * restart the sender's sweep publishes it through the real WebhookEventPublisher to a real
 * nats-server, where the webhooks unit's consumer stores exactly one delivery for it — also when
 * the sweep publishes it again.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { WebhookEventPublisher, type WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";
import { openStore } from "@mailroom/store/open.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { PublishedBroadcastEvents } from "../../services/broadcast/src/adapters/events.js";
import { applyEvent } from "../../services/broadcast/src/domain/outcomes.js";
import { Sender } from "../../services/broadcast/src/domain/sending.js";
import { pino } from "pino";
import { buildTestWorld, draft, FakeDirectory, ManualClock, silentLogger, type TestWorld } from "../../services/broadcast/src/testing.js";
import { consumeWebhookEvents } from "../../services/webhooks/src/consumers.js";
import { buildTestDomain } from "../../services/webhooks/src/testing.js";

const WS = "ws_acme";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("BROADCAST_COMPLETED after a process stopped between the status change and the publish", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let loop: ConsumeLoop;
  let hooks: Awaited<ReturnType<typeof buildTestDomain>>;
  let dir = "";

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "broadcast-completed-event-test");
    await ensureMailStreams(nc, 1);
    hooks = await buildTestDomain();
    hooks.clock.set("2030-01-01T00:00:00Z");
    loop = await consumeWebhookEvents(nc, { webhooks: hooks.webhookStore, deliveries: hooks.deliveries, clock: hooks.clock, ids: hooks.ids }, () => undefined, pino({ level: "silent" }));
    dir = await mkdtemp(path.join(os.tmpdir(), "mr-bc-completed-"));
  }, 30_000);

  afterAll(async () => {
    await loop?.stop();
    await hooks?.outbox.stop();
    await nc?.drain();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const senderOf = (w: TestWorld, events: PublishedBroadcastEvents, owner: string) =>
    new Sender({ ...w.repos, directory: w.directory, queue: w.queue, deliveryContent: w.content, clock: w.clock, logger: silentLogger, events }, { owner });
  const run = async (sender: Sender) => {
    for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
    throw new Error("sender kept working");
  };

  it("is published after the restart and delivered to the webhook exactly once", async () => {
    const webhook = await hooks.webhooks.create(WS, { url: "https://hooks.acme.test/mailroom", events: ["BROADCAST_STARTED", "BROADCAST_COMPLETED"] });
    const publisher = new WebhookEventPublisher(jetstream(nc));
    const published: string[] = [];
    const real = new PublishedBroadcastEvents({
      publish: async (spec: WebhookEventSpec) => {
        await publisher.publish(spec);
        published.push(spec.eventId);
      },
    });
    // The first process publishes STARTED, then stops right after the COMPLETED status write.
    const dying = new PublishedBroadcastEvents({
      publish: async (spec: WebhookEventSpec) => {
        if (spec.type === "BROADCAST_COMPLETED") throw new Error("process stopped");
        await publisher.publish(spec);
        published.push(spec.eventId);
      },
    });

    const clock = new ManualClock();
    const directory = new FakeDirectory();
    directory.addContacts(3);
    const first = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
    const { broadcast } = await first.service.create(WS, draft());
    await first.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    await run(senderOf(first, dying, "first"));
    const outcomeDeps = { broadcasts: first.repos.broadcasts, pages: first.repos.pages, ledger: first.repos.ledger, timeline: first.repos.timeline, content: first.content, clock, logger: silentLogger, events: dying };
    for (const id of first.queue.distinct()) await applyEvent(outcomeDeps, { kind: "sent", broadcastId: broadcast.id, deliveryId: id, contactId: "", messageId: "" });
    expect((await first.service.get(WS, broadcast.id)).status).toBe("COMPLETED");
    expect(published).toEqual([`${broadcast.id}.started`]);
    await first.store.close();

    // The restart: the sweep finds the unannounced completion and publishes it.
    const second = await buildTestWorld({ store: await openStore({ dataDir: dir, service: "broadcast" }), clock, directory });
    await run(senderOf(second, real, "restarted"));
    await run(senderOf(second, real, "restarted"));
    expect(published).toEqual([`${broadcast.id}.started`, `${broadcast.id}.completed`]);
    // A sweep that runs again (its mark not yet cleared) publishes the same id: the stream drops it.
    await publisher.publish({ eventId: `${broadcast.id}.completed`, type: "BROADCAST_COMPLETED", workspaceId: WS, occurredAt: clock.now(), data: {} });

    const completedDeliveries = async () => (await hooks.webhooks.listDeliveries(WS, webhook.id)).filter((d) => d.eventType === "BROADCAST_COMPLETED");
    for (let i = 0; i < 100 && (await completedDeliveries()).length === 0; i++) await sleep(50);
    await sleep(500);
    const deliveries = await completedDeliveries();
    expect(deliveries.map((d) => d.eventId)).toEqual([`${broadcast.id}.completed`]);
    const body = JSON.parse(deliveries[0].body);
    expect(body).toMatchObject({ id: `${broadcast.id}.completed`, type: "BROADCAST_COMPLETED", workspaceId: WS });
    expect(body.data.broadcast).toMatchObject({ id: broadcast.id, status: "COMPLETED", progress: { recipients: 3, sent: 3, delivered: 3 } });
    expect((await hooks.webhooks.listDeliveries(WS, webhook.id)).filter((d) => d.eventType === "BROADCAST_STARTED")).toHaveLength(1);
    await second.store.close();
  }, 60_000);
});
