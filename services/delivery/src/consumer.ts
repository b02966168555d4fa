import { fromBinary } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { DELIVERY_STREAM, DELIVERY_SUBJECTS } from "../../kit/src/jetstream.js";
import { DeliveryJobSchema, type DeliveryJob } from "../../../gen/mailroom/events/v1/events_pb.js";
import type { Decision, Deliverer } from "./deliverer.js";
import { jobSourceOf } from "./events.js";
import type { Job } from "./job.js";

export const DELIVERY_DURABLE = "delivery";
/** Header counting how often a job went back to the end of the queue after max_deliver. */
const REQUEUES_HEADER = "Mailroom-Requeues";
/** Jobs whose handler keeps throwing are given up after this many requeues. */
const MAX_ERROR_REQUEUES = 3;

export interface ConsumerOptions {
  concurrency: number;
  ackWaitMs: number;
  maxDeliver: number;
  /** On stop, time given to in-flight jobs before they are nak'ed for another process. */
  shutdownGraceMs: number;
  logger: Logger;
  durable?: string;
}

export interface DeliveryConsumer {
  readonly inFlight: number;
  /** Stops pulling; finishes in-flight jobs, or naks those still running after the grace. */
  stop(): Promise<void>;
}

export function toJob(j: DeliveryJob): Job | undefined {
  const source = jobSourceOf(j.source);
  if (!source) return undefined;
  return {
    deliveryId: j.deliveryId,
    workspaceId: j.workspaceId,
    source,
    messageId: j.messageId,
    emailId: j.emailId,
    broadcastId: j.broadcastId,
    recipient: { email: j.recipient?.email ?? "", contactId: j.recipient?.contactId ?? "", variables: j.recipient?.variables ?? {} },
    fromEmail: j.fromEmail,
    fromName: j.fromName,
    replyTo: j.replyTo,
    contentRef: j.contentRef,
    subjectPrefix: j.subjectPrefix,
    groupBy: j.groupBy,
  };
}

/**
 * Durable pull consumer on MAIL_DELIVERY with explicit acks and a bounded max_deliver.
 * Written here rather than with the kit's consumeProto because shutdown must be able to
 * hand a still-running job back (nak) without a late ack of ours landing on it afterwards,
 * and because a job that must wait beyond max_deliver (a long pause) is requeued.
 */
export async function startDeliveryConsumer(nc: NatsConnection, deliverer: Deliverer, opts: ConsumerOptions): Promise<DeliveryConsumer> {
  const durable = opts.durable ?? DELIVERY_DURABLE;
  const jsm = await jetstreamManager(nc);
  const config = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: DELIVERY_SUBJECTS,
    max_deliver: opts.maxDeliver,
    ack_wait: opts.ackWaitMs * 1_000_000,
    // Enough for every process's window; each process bounds its own by `concurrency`.
    max_ack_pending: 10_000,
  };
  try {
    await jsm.consumers.info(DELIVERY_STREAM, durable);
    await jsm.consumers.update(DELIVERY_STREAM, durable, config);
  } catch {
    await jsm.consumers.add(DELIVERY_STREAM, config);
  }
  const js = jetstream(nc);
  const consumer = await js.consumers.get(DELIVERY_STREAM, durable);
  const messages = await consumer.consume({ max_messages: opts.concurrency });
  const log = opts.logger;

  const running = new Map<JsMsg, Promise<void>>();
  /** Messages handed back on shutdown: whatever their handler decides later is ignored. */
  const abandoned = new Set<JsMsg>();
  let stopping = false;

  const settle = (msg: JsMsg, d: Decision) => {
    if (abandoned.has(msg)) return;
    if (d.kind === "ack") msg.ack();
    else if (d.kind === "retry") msg.nak(d.delayMs);
    else msg.term(d.reason);
  };

  const requeue = async (msg: JsMsg, job: Job | undefined) => {
    const h = natsHeaders();
    const count = Number(msg.headers?.get(REQUEUES_HEADER) || 0) + 1;
    h.set(REQUEUES_HEADER, String(count));
    // A fresh msgID per generation: the copy is not a duplicate of the original publish.
    await js.publish(msg.subject, msg.data, { msgID: `${job?.deliveryId ?? "job"}~rq${msg.seq}`, headers: h });
    return count;
  };

  const handle = async (msg: JsMsg) => {
    let job: Job | undefined;
    try {
      job = toJob(fromBinary(DeliveryJobSchema, msg.data));
    } catch (err) {
      log.error({ err, subject: msg.subject }, "undecodable delivery job terminated");
      return settle(msg, { kind: "drop", reason: "undecodable" });
    }
    if (!job) return settle(msg, { kind: "drop", reason: "unknown delivery source" });
    const last = msg.info.deliveryCount >= opts.maxDeliver;
    try {
      const decision = await deliverer.handle(job, { deliveryCount: msg.info.deliveryCount, working: () => msg.working() });
      if (decision.kind === "retry" && last && !abandoned.has(msg)) {
        await requeue(msg, job);
        return settle(msg, { kind: "ack" });
      }
      settle(msg, decision);
    } catch (err) {
      if (abandoned.has(msg)) return;
      const delayMs = Math.min(60_000, 1_000 * 2 ** Math.min(6, msg.info.deliveryCount - 1));
      log.warn({ err, deliveryId: job.deliveryId, attempt: msg.info.deliveryCount, delayMs }, "delivery job failed; retrying");
      if (!last) return settle(msg, { kind: "retry", delayMs });
      const requeues = Number(msg.headers?.get(REQUEUES_HEADER) || 0);
      if (requeues >= MAX_ERROR_REQUEUES) {
        log.error({ deliveryId: job.deliveryId }, "delivery job keeps failing; terminated");
        return settle(msg, { kind: "drop", reason: "handler keeps failing" });
      }
      try {
        await requeue(msg, job);
        settle(msg, { kind: "ack" });
      } catch {
        settle(msg, { kind: "retry", delayMs });
      }
    }
  };

  const loop = (async () => {
    for await (const msg of messages) {
      if (stopping) {
        msg.nak(); // pulled after stop: give it straight back
        continue;
      }
      const p = handle(msg).finally(() => running.delete(msg));
      running.set(msg, p);
      if (running.size >= opts.concurrency) await Promise.race(running.values());
    }
  })();

  return {
    get inFlight() {
      return running.size;
    },
    async stop() {
      stopping = true;
      await messages.close();
      await loop.catch(() => undefined);
      const all = Promise.allSettled([...running.values()]);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        all.then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), opts.shutdownGraceMs))),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        for (const msg of running.keys()) {
          abandoned.add(msg);
          msg.nak();
        }
        log.warn({ count: running.size }, "in-flight delivery jobs handed back on shutdown");
      }
    },
  };
}
