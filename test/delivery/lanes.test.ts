/**
 * The two delivery lanes (DESIGN §3) against a real nats-server and SMTP server: jobs
 * queued under the single consumer of earlier releases are still delivered after the
 * switch, broadcast jobs flow, and twenty thousand jobs of a paused broadcast do not
 * delay a transactional message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { startSmtpSink, type SmtpSink } from "../harness/smtp-sink.js";
import { connectNats, consumerConfig } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { deliveryJobSubject, DELIVERY_DURABLE, DELIVERY_LANES, DELIVERY_STREAM, DELIVERY_SUBJECTS } from "@mailroom/pipeline/subjects.js";
import { toBinary } from "@bufbuild/protobuf";
import { DeliveryJobSchema, DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { deliveryEnv, deliveryJob, publishJob, startDeliveryUnderTest, startNeighbours, tempDir, putContents, type Neighbours } from "./support.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";

const PAUSED_JOBS = 20_000;
const BROADCAST_MAX_ACK_PENDING = 1_000;
const PAUSE_RECHECK_MS = 1_000;

describe("delivery lanes", () => {
  const contents = new Map<string, CompiledMessage>();
  let nats: NatsHandle;
  let sink: SmtpSink;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let data: Awaited<ReturnType<typeof tempDir>>;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>> | undefined;

  beforeAll(async () => {
    [nats, sink, neighbours, data] = await Promise.all([startNats(), startSmtpSink(), startNeighbours(), tempDir("mailroom-lanes-")]);
    contents.set("ws_acme/email:trs_1", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>", workspaceId: "ws_acme" }));
    for (const id of ["cmp_old", "cmp_flow", "cmp_big"]) {
      contents.set(`ws_acme/broadcast:${id}`, compiledFrom({ subject: "News", html: "<p>News for {{firstName}}</p>", broadcast: true, workspaceId: "ws_acme" }));
    }
    neighbours.senders.set("ws_acme/news@acme.test", { address: "news@acme.test" });
    nc = await connectNats(nats.url, "lanes-suite");
    await ensureMailStreams(nc);
    await putContents(nc, contents);
  });

  afterAll(async () => {
    await delivery?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), sink?.stop(), neighbours?.stop()]);
    await data?.remove();
  });

  const start = () =>
    startDeliveryUnderTest(
      nc,
      deliveryEnv({
        natsUrl: nats.url, smtpUrl: sink.url, dataDir: data.dir, neighboursUrl: neighbours.url,
        extra: {
          MAILROOM_DELIVERY_PAUSE_RECHECK_MS: String(PAUSE_RECHECK_MS),
          MAILROOM_DELIVERY_BROADCAST_MAX_ACK_PENDING: String(BROADCAST_MAX_ACK_PENDING),
          MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: "32",
        },
      }),
    );
  const received = (to: string) => sink.messages.filter((m) => m.to.includes(to));
  const until = async (check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  it("delivers jobs queued under the single pre-lanes consumer after switching to the lanes", async () => {
    const jsm = await jetstreamManager(nc);
    // The set-up of earlier releases: one durable for every job, nobody pulling right now.
    await jsm.consumers.add(DELIVERY_STREAM, consumerConfig({ stream: DELIVERY_STREAM, durable: DELIVERY_DURABLE, filterSubjects: [DELIVERY_SUBJECTS], maxAckPending: 10_000 }));
    await publishJob(nc, { deliveryId: "dlv_old_trs", to: "old-trs@example.test" });
    await publishJob(nc, { deliveryId: "dlv_old_bc", to: "old-bc@example.test", source: DeliverySource.BROADCAST, broadcastId: "cmp_old", contentRef: "broadcast:cmp_old" });

    delivery = await start();
    await until(() => received("old-trs@example.test").length + received("old-bc@example.test").length === 2, 15_000, "queued jobs delivered");
    const names: string[] = [];
    for await (const c of jsm.consumers.list(DELIVERY_STREAM)) names.push(c.name);
    expect(names.sort()).toEqual([DELIVERY_LANES.broadcast.durable, DELIVERY_LANES.transactional.durable].sort());
    expect((await jsm.consumers.info(DELIVERY_STREAM, DELIVERY_LANES.broadcast.durable)).config.max_ack_pending).toBe(BROADCAST_MAX_ACK_PENDING);
  });

  it("delivers broadcast jobs on the broadcast lane when the broadcast is not paused", async () => {
    for (let i = 0; i < 40; i++) {
      await publishJob(nc, { deliveryId: `dlv_flow_${i}`, to: `flow${i}@example.test`, source: DeliverySource.BROADCAST, broadcastId: "cmp_flow", contentRef: "broadcast:cmp_flow" });
    }
    await until(() => sink.messages.filter((m) => m.to.some((t) => t.startsWith("flow"))).length === 40, 15_000, "broadcast jobs delivered");
    // Built from one skeleton: every recipient's message has the broadcast's one boundary.
    const boundaries = new Set(sink.messages.filter((m) => m.to.some((t) => t.startsWith("flow"))).map((m) => /boundary="([^"]+)"/.exec(m.raw)?.[1]));
    expect([...boundaries]).toHaveLength(1);
    expect([...boundaries][0]).toMatch(/^=_mr_/);
    const jsm = await jetstreamManager(nc);
    expect((await jsm.consumers.info(DELIVERY_STREAM, DELIVERY_LANES.broadcast.durable)).delivered.consumer_seq).toBeGreaterThanOrEqual(40);
  });

  it(`accepts a transactional message within a second while ${PAUSED_JOBS} jobs of a paused broadcast are queued`, async () => {
    await delivery!.client.pauseBroadcast({ broadcastId: "cmp_big" });
    const js = jetstream(nc);
    const subject = deliveryJobSubject("broadcast", "cmp_big");
    let next = 0;
    const publisher = async () => {
      while (next < PAUSED_JOBS) {
        const i = next++;
        const job = deliveryJob({ deliveryId: `dlv_big_${i}`, to: `big${i}@example.test`, source: DeliverySource.BROADCAST, broadcastId: "cmp_big", contentRef: "broadcast:cmp_big" });
        await js.publish(subject, toBinary(DeliveryJobSchema, job), { msgID: job.deliveryId });
      }
    };
    await Promise.all(Array.from({ length: 128 }, publisher));

    // The broadcast lane is full of held jobs: every slot it may hand out is taken.
    const jsm = await jetstreamManager(nc);
    const broadcastLane = () => jsm.consumers.info(DELIVERY_STREAM, DELIVERY_LANES.broadcast.durable);
    await until(async () => (await broadcastLane()).num_ack_pending >= BROADCAST_MAX_ACK_PENDING, 30_000, "broadcast lane saturated");

    // Held jobs are looked at again once per recheck, not in a loop: over two seconds the
    // lane hands out at most its window once per recheck (plus the window in progress).
    const before = (await broadcastLane()).delivered.consumer_seq;
    await new Promise((r) => setTimeout(r, 2_000));
    const handedOut = (await broadcastLane()).delivered.consumer_seq - before;
    expect(handedOut).toBeLessThanOrEqual(BROADCAST_MAX_ACK_PENDING * (2_000 / PAUSE_RECHECK_MS + 1));

    const sentAt = Date.now();
    await publishJob(nc, { deliveryId: "dlv_reset", to: "reset@example.test" });
    await until(() => received("reset@example.test").length === 1, 5_000, "transactional message accepted");
    const elapsed = Date.now() - sentAt;
    expect(elapsed).toBeLessThan(1_000);
    expect(sink.messages.filter((m) => m.to.some((t) => t.startsWith("big")))).toHaveLength(0);
    expect((await broadcastLane()).num_pending + (await broadcastLane()).num_ack_pending).toBeGreaterThan(PAUSED_JOBS - 1);
  }, 120_000);
});
