import { connect, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JsMsg,
} from "@nats-io/jetstream";
import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "./logger.js";

export type { NatsConnection, JetStreamClient, JsMsg };

/** Work queue of delivery jobs: each job is held until one worker acks it. */
export const DELIVERY_STREAM = "MAIL_DELIVERY";
export const DELIVERY_SUBJECTS = "mail.delivery.>";
/** Outcomes and tracking events, kept for replay; several services consume them. */
export const EVENTS_STREAM = "MAIL_EVENTS";
export const EVENTS_SUBJECTS = "mail.events.>";

export async function connectNats(
  url: string,
  name: string,
  /** Extra connection options, e.g. `{ noAsyncTraces: true }` for hot paths. */
  options: Partial<ConnectionOptions> = {},
): Promise<NatsConnection> {
  return connect({ servers: url.split(","), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, ...options });
}

/** Creates (or updates) the streams every service relies on. Idempotent. */
export async function ensureStreams(nc: NatsConnection): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const streams = [
    {
      name: DELIVERY_STREAM,
      subjects: [DELIVERY_SUBJECTS],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: 2 * 60 * 1_000_000_000, // ns: msgID dedupe window
    },
    {
      name: EVENTS_STREAM,
      subjects: [EVENTS_SUBJECTS],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: 7 * 24 * 3600 * 1_000_000_000,
      duplicate_window: 2 * 60 * 1_000_000_000,
    },
  ];
  for (const cfg of streams) {
    try {
      await jsm.streams.info(cfg.name);
      await jsm.streams.update(cfg.name, cfg);
    } catch {
      await jsm.streams.add(cfg);
    }
  }
}

/** Publishes a protobuf message with a Nats-Msg-Id so retried publishes are deduplicated. */
export async function publishProto<D extends DescMessage>(
  js: JetStreamClient,
  subject: string,
  schema: D,
  message: MessageShape<D>,
  msgID: string,
): Promise<void> {
  await js.publish(subject, toBinary(schema, message), { msgID });
}

export interface ConsumerSpec {
  stream: string;
  durable: string;
  filterSubjects?: string[];
  /** Redeliveries before a message is given up (the handler sees the last attempt). */
  maxDeliver?: number;
  ackWaitMs?: number;
  maxAckPending?: number;
}

/** Outcome of handling one message; `retry` naks with a delay, `drop` terms it. */
export type HandleResult = { kind: "ack" } | { kind: "retry"; delayMs: number } | { kind: "drop"; reason: string };

export const ack = (): HandleResult => ({ kind: "ack" });
export const retry = (delayMs: number): HandleResult => ({ kind: "retry", delayMs });
export const drop = (reason: string): HandleResult => ({ kind: "drop", reason });

export interface ConsumeLoop {
  /** Stops pulling, waits for in-flight handlers, returns when they are settled. */
  stop(): Promise<void>;
}

/**
 * Durable pull consumer with explicit ack, running up to `concurrency` handlers at once.
 * A handler that throws is retried with exponential backoff; a message that cannot be
 * decoded is terminated (poison). Long handlers call `msg.working()` themselves.
 */
export async function consumeProto<D extends DescMessage>(
  nc: NatsConnection,
  spec: ConsumerSpec,
  schema: D,
  handler: (value: MessageShape<D>, msg: JsMsg) => Promise<HandleResult>,
  opts: { logger: Logger; concurrency?: number },
): Promise<ConsumeLoop> {
  const jsm = await jetstreamManager(nc);
  const config = {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_deliver: spec.maxDeliver ?? 10,
    ack_wait: (spec.ackWaitMs ?? 60_000) * 1_000_000,
    max_ack_pending: spec.maxAckPending ?? 1_000,
    ...(spec.filterSubjects?.length === 1
      ? { filter_subject: spec.filterSubjects[0] }
      : spec.filterSubjects?.length
        ? { filter_subjects: spec.filterSubjects }
        : {}),
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    await jsm.consumers.update(spec.stream, spec.durable, config);
  } catch {
    await jsm.consumers.add(spec.stream, config);
  }
  const consumer = await jetstream(nc).consumers.get(spec.stream, spec.durable);
  const concurrency = opts.concurrency ?? 16;
  const messages = await consumer.consume({ max_messages: concurrency });
  const inFlight = new Set<Promise<void>>();
  let stopped = false;

  const handleOne = async (msg: JsMsg) => {
    let value: MessageShape<D>;
    try {
      value = fromBinary(schema, msg.data);
    } catch (err) {
      opts.logger.error({ err, subject: msg.subject }, "undecodable message terminated");
      msg.term("undecodable");
      return;
    }
    try {
      const result = await handler(value, msg);
      if (result.kind === "ack") msg.ack();
      else if (result.kind === "retry") msg.nak(result.delayMs);
      else msg.term(result.reason);
    } catch (err) {
      const delay = backoffMs(msg.info.deliveryCount);
      opts.logger.warn({ err, subject: msg.subject, attempt: msg.info.deliveryCount, delay }, "handler failed; retrying");
      msg.nak(delay);
    }
  };

  const loop = (async () => {
    for await (const msg of messages) {
      if (stopped) {
        msg.nak();
        continue;
      }
      const p = handleOne(msg).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= concurrency) await Promise.race(inFlight);
    }
  })();

  return {
    async stop() {
      stopped = true;
      await messages.close();
      await loop.catch(() => undefined);
      await Promise.allSettled([...inFlight]);
    },
  };
}

/** 1s, 2s, 4s … capped at 5 minutes. */
export function backoffMs(attempt: number, baseMs = 1_000, capMs = 300_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}
