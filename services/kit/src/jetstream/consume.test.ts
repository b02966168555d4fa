import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager, JetStreamApiError, RetentionPolicy } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { startNats, type NatsHandle } from "../../../../test/harness/nats.js";
import { connectNats } from "../jetstream.js";
import { ack, consume, drop, retry, type ConsumeLoop, type HandleResult, type MessageContext } from "./consume.js";
import { ensureConsumer, ensureStream } from "./streams.js";

const logger = pino({ level: "silent" });
const text = (data: Uint8Array) => {
  const s = new TextDecoder().decode(data);
  if (s.startsWith("poison")) throw new Error("cannot decode");
  return s;
};

describe("the JetStream consumer loop", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  let n = 0;
  /** A fresh work-queue stream per test so tests never see each other's messages. */
  const freshStream = async () => {
    n += 1;
    const name = `TEST_${n}`;
    await ensureStream(await jetstreamManager(nc), { name, subjects: [`test${n}.>`], retention: RetentionPolicy.Workqueue });
    return { stream: name, subject: `test${n}.job` };
  };
  const publish = (subject: string, body: string, msgID = `${subject}-${body}`) =>
    jetstream(nc).publish(subject, new TextEncoder().encode(body), { msgID });
  const until = async (check: () => boolean, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  /** Messages the consumer still has to deliver or wait an ack for. */
  const pending = async (stream: string) => {
    const info = await (await jetstreamManager(nc)).consumers.info(stream, "w");
    return info.num_pending + info.num_ack_pending;
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "consume-test");
  });
  afterAll(async () => {
    await nc?.drain();
    await nats?.stop();
  });

  it("acks handled messages, retries thrown ones with backoff and terminates poison", async () => {
    const { stream, subject } = await freshStream();
    const seen: Array<[string, number]> = [];
    const loop = await consume(nc, { stream, durable: "w", maxDeliver: 5, ackWaitMs: 5_000 }, text, async (body, ctx) => {
      seen.push([body, ctx.deliveryCount]);
      if (body === "flaky" && ctx.deliveryCount === 1) throw new Error("transient");
      return ack();
    }, { logger, errorBackoffMs: () => 50 });
    await publish(subject, "ok");
    await publish(subject, "flaky");
    await publish(subject, "poison!");
    await until(() => seen.filter(([b]) => b === "flaky").length === 2);
    await until(() => seen.length === 3);
    await new Promise((r) => setTimeout(r, 100));
    expect(await pending(stream)).toBe(0); // acked or terminated: the work queue is empty
    expect(seen).toContainEqual(["flaky", 2]);
    expect(seen.map(([b]) => b)).not.toContain("poison!");
    await loop.stop();
  });

  it("naks with the handler's delay and terminates what it drops", async () => {
    const { stream, subject } = await freshStream();
    const calls: number[] = [];
    const loop = await consume(nc, { stream, durable: "w", maxDeliver: 5 }, text, async (body, ctx): Promise<HandleResult> => {
      calls.push(Date.now());
      if (body === "drop") return drop("not for us");
      return ctx.deliveryCount === 1 ? retry(300) : ack();
    }, { logger });
    await publish(subject, "later");
    await until(() => calls.length === 2);
    expect(calls[1] - calls[0]).toBeGreaterThanOrEqual(250);
    await publish(subject, "drop");
    await until(() => calls.length === 3);
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).toHaveLength(3);
    await loop.stop();
  });

  it("requeues a message that runs out of deliveries, and gives up one whose handler keeps failing", async () => {
    const { stream, subject } = await freshStream();
    const seen: Array<{ body: string; ctx: MessageContext }> = [];
    const holdUntil = Date.now() + 600;
    let done = false;
    const loop = await consume(nc, { stream, durable: "w", maxDeliver: 2 }, text, async (body, ctx) => {
      seen.push({ body, ctx });
      if (body === "fails") throw new Error("always");
      if (Date.now() < holdUntil) return retry(50);
      done = true;
      return ack();
    }, { logger, requeue: { maxOnError: 2 }, errorBackoffMs: () => 20, idOf: (b) => b });
    await publish(subject, "paused");
    await until(() => done);
    const paused = seen.filter((s) => s.body === "paused");
    expect(paused.length).toBeGreaterThan(2); // more attempts than max_deliver allows
    expect(paused.filter((s) => s.ctx.deliveryCount === 1).length).toBeGreaterThan(1); // requeued copies

    await publish(subject, "fails");
    // 2 deliveries per generation, 1 + maxOnError generations, then terminated.
    await until(() => seen.filter((s) => s.body === "fails").length === 6);
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.filter((s) => s.body === "fails")).toHaveLength(6);
    expect(await pending(stream)).toBe(0);
    await loop.stop();
  });

  it("on stop, lets quick handlers finish and hands back slow ones at once, ignoring their late answer", async () => {
    const { stream, subject } = await freshStream();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const loop: ConsumeLoop = await consume(nc, { stream, durable: "w", maxDeliver: 5, ackWaitMs: 30_000 }, text, async (body) => {
      if (body === "slow") await slow;
      else await new Promise((r) => setTimeout(r, 100));
      return ack();
    }, { logger, shutdownGraceMs: 300 });
    await publish(subject, "quick");
    await publish(subject, "slow");
    await until(() => loop.inFlight === 2);
    await loop.stop();
    release();

    // The slow one was nak'ed (not left to its 30 s ack wait): another worker gets it now.
    const again: Array<[string, number]> = [];
    const other = await consume(nc, { stream, durable: "w", maxDeliver: 5, ackWaitMs: 30_000 }, text, async (body, ctx) => {
      again.push([body, ctx.deliveryCount]);
      return ack();
    }, { logger });
    await until(() => again.length === 1, 3_000);
    expect(again.map(([body]) => body)).toEqual(["slow"]);
    await other.stop();
  });

  it("never holds more messages than it handles at once, even when slow handlers outlast the pulls", async () => {
    const { stream, subject } = await freshStream();
    for (let i = 0; i < 60; i++) await publish(subject, `job${i}`);
    let handled = 0;
    // Handlers of 2.2 s against pulls that expire after 1 s (the least nats.js takes):
    // nats.js's consume() pulled again on every expiry and queued the surplus in the client,
    // up to max_ack_pending.
    const loop = await consume(nc, { stream, durable: "w", maxDeliver: 5, ackWaitMs: 30_000, maxAckPending: 1_000 }, text, async () => {
      await new Promise((r) => setTimeout(r, 2_200));
      handled += 1;
      return ack();
    }, { logger, concurrency: 4, pullExpiresMs: 1_000 });
    const jsm = await jetstreamManager(nc);
    let most = 0;
    const started = Date.now();
    while (Date.now() - started < 5_000) {
      most = Math.max(most, (await jsm.consumers.info(stream, "w")).num_ack_pending);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(handled).toBeGreaterThanOrEqual(8); // slots are refilled: 4 per 2.2 s
    expect(most).toBeLessThanOrEqual(4);
    await loop.stop();
  });

  it("set-up propagates failures other than not found", async () => {
    const jsm = await jetstreamManager(nc);
    await expect(ensureConsumer(jsm, { stream: "NO_SUCH_STREAM", durable: "w" })).rejects.toBeInstanceOf(JetStreamApiError);
    // Subjects overlapping another stream's: refused, not mistaken for "not found".
    await expect(ensureStream(jsm, { name: "OVERLAP", subjects: ["test1.>"] })).rejects.toBeInstanceOf(JetStreamApiError);
    // An update the server refuses (a work queue cannot become a limits stream) propagates too.
    await expect(ensureStream(jsm, { name: "TEST_1", subjects: ["test1.>"], retention: RetentionPolicy.Limits })).rejects.toThrow();
  });
});
