import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { connectNats, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { eventSubject } from "@mailroom/pipeline/subjects.js";
import { createLogger } from "@mailroom/kit/logger.js";
import { consumeMailEvents } from "../../services/email/src/consumers.js";
import type { OutcomeStore } from "../../services/email/src/domain/ports.js";
import { buildTestWorld, type TestWorld } from "../../services/email/src/testing.js";
import { startNats, type NatsHandle } from "../harness/nats.js";

const WS = "ws_acme";

/**
 * The email service's consumer on a real nats-server: an event redelivered by JetStream
 * after the service wrote its effect but died before acking, and an event republished under
 * another msgID, are each counted once.
 */
describe("email event consumer redelivery", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let loop: ConsumeLoop | undefined;
  let w: TestWorld;
  let failAfterApply = 0;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "outcomes-test");
    await ensureMailStreams(nc);
    w = await buildTestWorld({ clock: undefined });
    const real = w.outcomeDeps.outcomes;
    // Writes the event's effect, then fails as a process dying before its ack would.
    const flaky: OutcomeStore = {
      async applyOnce(emailId, eventId, change) {
        const result = await real.applyOnce(emailId, eventId, change);
        if (failAfterApply > 0) {
          failAfterApply--;
          throw new Error("died before the ack");
        }
        return result;
      },
      claimAndCount: (...args) => real.claimAndCount(...args),
      takeOwedCount: (...args) => real.takeOwedCount(...args),
    };
    loop = await consumeMailEvents(nc, { ...w.outcomeDeps, outcomes: flaky }, createLogger("outcomes-test", "silent"));
  }, 60_000);
  afterAll(async () => {
    await loop?.stop();
    await nc?.close();
    await nats?.stop();
  });

  const publish = (eventId: string, emailId: string, type: MailEventType, msgID: string, url = "") =>
    jetstream(nc).publish(
      eventSubject("transactional", MailEventType[type].toLowerCase()),
      toBinary(MailEventSchema, create(MailEventSchema, { eventId, type, workspaceId: WS, source: DeliverySource.TRANSACTIONAL, emailId, url, occurredAt: timestampNow() })),
      { msgID },
    );

  async function until(check: () => Promise<boolean>, timeoutMs = 20_000) {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("counts an event once whether JetStream redelivers it or it is published twice", async () => {
    const email = await w.service.send(WS, { to: "ann@example.test", content: { kind: "raw", from: "team@acme.test", subject: "Hi", html: "<p>Hi</p>" } });
    const day = w.clock.now().toISOString().slice(0, 10);
    const opens = async () => (await w.service.get(WS, email.id)).outcomes?.opens ?? 0;
    const clicks = async () => (await w.service.get(WS, email.id)).outcomes?.clicks ?? 0;

    failAfterApply = 1;
    await publish("evt_open_1", email.id, MailEventType.OPENED, "m1");
    // The first delivery wrote the open and failed; the redelivery must not count it again.
    await until(async () => failAfterApply === 0 && (await opens()) === 1);
    await publish("evt_click_1", email.id, MailEventType.CLICKED, "m2", "https://acme.test/a");
    await publish("evt_click_1", email.id, MailEventType.CLICKED, "m3", "https://acme.test/a");
    await publish("evt_open_2", email.id, MailEventType.OPENED, "m4");
    await until(async () => (await opens()) === 2 && (await clicks()) === 1);
    await new Promise((r) => setTimeout(r, 1500)); // time for the redelivery after the handler's failure
    const record = await w.service.get(WS, email.id);
    expect(record.outcomes).toMatchObject({ opens: 2, clicks: 1, links: [{ url: "https://acme.test/a", clicks: 1 }] });
    const stats = await w.service.stats(WS, { from: day, to: day });
    // The open whose handler died after writing the email's record is counted by its redelivery.
    expect(stats.totals).toMatchObject({ opened: 1, clicked: 1, opens: 2, clicks: 1 });
  }, 60_000);
});
