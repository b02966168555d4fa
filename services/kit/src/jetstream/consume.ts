/**
 * The one JetStream consumer loop: a durable pull consumer with explicit acks, a bounded
 * number of handlers at once, `nak` with backoff, `term` for poison, optional requeue of
 * messages that run out of deliveries, and hand-back on shutdown.
 */
import { fromBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../logger.js";
import { counter, gauge, histogram, secondsSince } from "../metrics.js";
import { ensureConsumer, retryOnTimeout, type ConsumerSpec } from "./streams.js";
import { extractTraceContext, REQUEST_ID_ATTRIBUTE, REQUEST_ID_HEADER, SpanKind, startSpan, tracingOn, withContext } from "../tracing.js";
import { publishTraced } from "./publish.js";

/** Outcome of handling one message: ack it, nak it with a delay, or terminate it. */
export type HandleResult = { kind: "ack" } | { kind: "retry"; delayMs: number } | { kind: "drop"; reason: string };

export const ack = (): HandleResult => ({ kind: "ack" });
export const retry = (delayMs: number): HandleResult => ({ kind: "retry", delayMs });
export const drop = (reason: string): HandleResult => ({ kind: "drop", reason });

/** What a handler may know and do about the message it handles. */
export interface MessageContext {
  subject: string;
  /** 1 on first delivery; JetStream counts naks too. */
  deliveryCount: number;
  /** This is the last delivery the consumer's max_deliver allows. */
  lastDelivery: boolean;
  /** Extends the message's ack deadline: long handlers call it every fraction of ack wait. */
  working(): void;
}

export type Handler<T> = (value: T, ctx: MessageContext) => Promise<HandleResult>;

export interface ConsumeOptions<T> {
  logger: Logger;
  /** Handlers running at once (and messages pulled ahead). */
  concurrency?: number;
  /**
   * On stop, how long in-flight handlers may finish; those still running are then nak'ed
   * so another process takes them at once, and whatever they decide later is ignored.
   */
  shutdownGraceMs?: number;
  /** Delay before a message whose handler threw is delivered again (by delivery count). */
  errorBackoffMs?: (deliveryCount: number) => number;
  /** Names a message in logs and requeued copies' msgIDs (e.g. its delivery id). */
  idOf?: (value: T) => string;
  /**
   * For work that may legitimately wait longer than max_deliver deliveries allow (pauses
   * and rate waits count as deliveries): a message whose last delivery ends in a retry is
   * published again at the end of the queue, with a requeue counter, and acked. A handler
   * that keeps throwing is terminated after `maxOnError` requeues.
   */
  requeue?: { maxOnError: number };
  /** How often the consumer's backlog (num_pending) is read for the lag gauge. Default 10 s. */
  lagPollMs?: number;
  /** How long one pull request waits on the server (and the failover back-off). Default 5 s. */
  pullExpiresMs?: number;
}

export interface ConsumeLoop {
  /** Messages being handled now. */
  readonly inFlight: number;
  /** Stops pulling; lets in-flight handlers finish within the grace, hands back the rest. */
  stop(): Promise<void>;
}

/** Header counting how often a message went back to the end of the queue. */
export const REQUEUES_HEADER = "Mailroom-Requeues";

/** 1s, 2s, 4s … capped at 5 minutes. */
export function backoffMs(attempt: number, baseMs = 1_000, capMs = 300_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

const handled = counter(
  "mailroom_jetstream_messages_handled_total",
  "JetStream messages settled by stream, durable and result (ack, nak, term).",
  ["stream", "durable", "result"],
);
const redelivered = counter(
  "mailroom_jetstream_redeliveries_total",
  "Messages received again (delivery count above 1: a nak, an ack timeout, a process that died).",
  ["stream", "durable"],
);
const requeued = counter("mailroom_jetstream_requeued_total", "Messages published again at the end of the queue after their last delivery.", ["stream", "durable"]);
const handlerSeconds = histogram("mailroom_jetstream_handler_duration_seconds", "Time a handler took per message.", ["stream", "durable"]);
const pendingMessages = gauge(
  "mailroom_jetstream_consumer_pending_messages",
  "Consumer lag: messages in the stream not yet delivered to the durable (num_pending, polled). Every process of a durable reports the same backlog.",
  ["stream", "durable"],
  undefined,
  "max", // each worker polls the same backlog
);
const ackPendingMessages = gauge("mailroom_jetstream_consumer_ack_pending_messages", "Messages delivered to the durable and not yet acknowledged (polled).", ["stream", "durable"], undefined, "max");
const inFlightMessages = gauge("mailroom_jetstream_in_flight_messages", "Messages being handled by this process.", ["stream", "durable"]);

interface InFlight {
  promise: Promise<void>;
  /** Handed back on shutdown: the handler's late decision must not land on it. */
  abandoned: boolean;
}

/**
 * Consumes `spec` (creating or updating its durable), decoding each message with `decode`;
 * a message that cannot be decoded is poison and is terminated.
 */
export async function consume<T>(
  nc: NatsConnection,
  spec: ConsumerSpec,
  decode: (data: Uint8Array) => T,
  handler: Handler<T>,
  opts: ConsumeOptions<T>,
): Promise<ConsumeLoop> {
  const jsm = await jetstreamManager(nc);
  await retryOnTimeout(() => ensureConsumer(jsm, spec));
  const js = jetstream(nc);
  const consumer = await js.consumers.get(spec.stream, spec.durable);
  const concurrency = opts.concurrency ?? 16;
  const maxDeliver = spec.maxDeliver ?? 10;
  const errorBackoff = opts.errorBackoffMs ?? ((n: number) => backoffMs(n));
  const log = opts.logger;
  // Short pulls: after a failover (the server this process used, or the consumer's leader, is
  // lost) a pull fails within one expiry and the next one finds the new leader; 5 s costs one
  // idle pull per 5 s.
  const pullExpiresMs = Math.max(1_000, opts.pullExpiresMs ?? 5_000); // nats.js's least
  const pulls = new Set<ConsumerMessages>();
  const running = new Map<JsMsg, InFlight>();
  let stopping = false;
  const labels = { stream: spec.stream, durable: spec.durable };
  // Labelled children made once: prom-client checks a label set on every call made with one,
  // which per message (a broadcast's every outcome event) was 2% of a consumer's CPU.
  const settledAs = { ack: handled.labels({ ...labels, result: "ack" }), nak: handled.labels({ ...labels, result: "nak" }), term: handled.labels({ ...labels, result: "term" }) };
  const handlerTimer = handlerSeconds.labels(labels);
  const redeliveredCount = redelivered.labels(labels);
  const inFlightCount = inFlightMessages.labels(labels);
  const counted = (result: "ack" | "nak" | "term") => settledAs[result].inc();
  const nakNow = (msg: JsMsg) => {
    counted("nak");
    msg.nak();
  };

  // Lag: the backlog the server holds for this durable, read every lagPollMs.
  const pollLag = async () => {
    try {
      const info = await consumer.info();
      pendingMessages.set(labels, info.num_pending);
      ackPendingMessages.set(labels, info.num_ack_pending);
    } catch (err) {
      log.debug({ err, durable: spec.durable }, "consumer info for the lag gauge failed");
    }
  };
  void pollLag();
  const lagTimer = setInterval(() => void pollLag(), opts.lagPollMs ?? 10_000);
  lagTimer.unref();

  const settle = (msg: JsMsg, result: HandleResult) => {
    if (running.get(msg)?.abandoned) return;
    counted(result.kind === "ack" ? "ack" : result.kind === "retry" ? "nak" : "term");
    if (result.kind === "ack") msg.ack();
    else if (result.kind === "retry") msg.nak(result.delayMs);
    else {
      // Logged, not sent: nats-server 2.9 ignores a term that carries a reason ("+TERM why").
      log.warn({ subject: msg.subject, seq: msg.seq, reason: result.reason }, "message terminated");
      msg.term();
    }
  };

  const requeuesOf = (msg: JsMsg) => Number(msg.headers?.get(REQUEUES_HEADER) || 0);

  /** Publishes a copy at the end of the queue, then acks the original. */
  const requeue = async (msg: JsMsg, id: string, retryDelayMs: number) => {
    if (running.get(msg)?.abandoned) return;
    const h = natsHeaders();
    h.set(REQUEUES_HEADER, String(requeuesOf(msg) + 1));
    // The copy keeps the original's request id; its trace context is this handling's (below).
    const requestId = msg.headers?.get(REQUEST_ID_HEADER);
    if (requestId) h.set(REQUEST_ID_HEADER, requestId);
    try {
      // A fresh msgID per generation: the copy is not a duplicate of the original publish.
      await publishTraced(js, msg.subject, msg.data, { msgID: `${id}~rq${msg.seq}`, headers: h });
    } catch (err) {
      log.warn({ err, id, subject: msg.subject }, "requeue failed; retrying in place");
      return settle(msg, retry(retryDelayMs));
    }
    requeued.inc(labels);
    settle(msg, ack());
  };

  const handle = async (msg: JsMsg) => {
    let value: T;
    try {
      value = decode(msg.data);
    } catch (err) {
      log.error({ err, subject: msg.subject }, "undecodable message");
      return settle(msg, drop("undecodable"));
    }
    const id = opts.idOf?.(value) ?? `${spec.stream}-${msg.seq}`;
    const deliveryCount = msg.info.deliveryCount;
    if (deliveryCount > 1) redeliveredCount.inc();
    const lastDelivery = deliveryCount >= maxDeliver;
    const ctx: MessageContext = { subject: msg.subject, deliveryCount, lastDelivery, working: () => msg.working() };
    let result: HandleResult;
    const started = performance.now();
    const traced = tracingOn() ? handlingSpan(msg, spec) : undefined;
    try {
      result = await withContext(traced?.context, () => handler(value, ctx));
      handlerTimer.observe(secondsSince(started));
      traced?.span.setAttribute("mailroom.outcome", result.kind);
      traced?.span.end();
    } catch (err) {
      handlerTimer.observe(secondsSince(started));
      traced?.span.setAttributes({ "mailroom.outcome": "error", "error.type": err instanceof Error ? err.name : "error" });
      traced?.span.setStatus({ code: 2 });
      traced?.span.end();
      if (running.get(msg)?.abandoned) return;
      const delayMs = errorBackoff(deliveryCount);
      log.warn({ err, id, subject: msg.subject, attempt: deliveryCount, delayMs }, "handler failed; retrying");
      if (!lastDelivery || !opts.requeue) return settle(msg, retry(delayMs));
      if (requeuesOf(msg) >= opts.requeue.maxOnError) {
        log.error({ id, subject: msg.subject }, "handler keeps failing; message terminated");
        return settle(msg, drop("handler keeps failing"));
      }
      return requeue(msg, id, delayMs);
    }
    if (result.kind === "retry" && lastDelivery && opts.requeue) return requeue(msg, id, result.delayMs);
    settle(msg, result);
  };

  const start = (msg: JsMsg) => {
    if (stopping) {
      nakNow(msg); // pulled after stop: give it straight back
      return;
    }
    const entry: InFlight = { promise: Promise.resolve(), abandoned: false };
    running.set(msg, entry);
    inFlightCount.inc();
    entry.promise = handle(msg)
      .catch((err) => log.error({ err, subject: msg.subject }, "message handling failed"))
      .finally(() => {
        running.delete(msg);
        inFlightCount.dec();
        wake();
      });
  };

  // Pull only for free slots: messages asked for but not yet received (`requested`) plus those
  // being handled never exceed `concurrency`. nats.js's consume() re-pulls as messages arrive,
  // whatever the handlers keep up with, and each pull that expired while they were busy left
  // more delivered-but-unhandled messages queued in the client, up to the consumer's
  // max_ack_pending: a thousand broadcast pages (250 MB) held by a delivery that is behind,
  // their ack wait running. Several pulls may be open at once, so a slot freed while one waits
  // for its batch is filled by the next without waiting for that one to expire.
  let requested = 0;
  let failures = 0;
  let wakeUp: (() => void) | undefined;
  const wake = () => {
    wakeUp?.();
    wakeUp = undefined;
  };
  const pull = async (want: number) => {
    requested += want;
    let received = 0;
    try {
      const batch = await consumer.fetch({ max_messages: want, expires: pullExpiresMs });
      pulls.add(batch);
      if (stopping) void batch.close();
      try {
        for await (const msg of batch) {
          received++;
          requested--;
          start(msg);
        }
      } finally {
        pulls.delete(batch);
      }
      failures = 0;
    } catch (err) {
      if (!stopping) {
        failures++;
        log.warn({ err, durable: spec.durable }, "pull failed; pulling again after a pause");
        await new Promise((r) => setTimeout(r, Math.min(pullExpiresMs, 250 * 2 ** Math.min(failures, 5))));
        // The durable may have gone with a lost server: make sure it exists again.
        if (failures > 1) await ensureConsumer(jsm, spec).catch(() => undefined);
      }
    } finally {
      requested -= want - received;
      wake();
    }
  };
  const loop = (async () => {
    while (!stopping) {
      const free = concurrency - running.size - requested;
      if (free > 0 && (failures === 0 || requested === 0)) {
        void pull(free);
        continue;
      }
      await new Promise<void>((resolve) => (wakeUp = resolve));
    }
  })();

  return {
    get inFlight() {
      return running.size;
    },
    async stop() {
      stopping = true;
      clearInterval(lagTimer);
      wake();
      await Promise.all([...pulls].map((batch) => batch.close()));
      await loop.catch(() => undefined);
      const all = Promise.allSettled([...running.values()].map((r) => r.promise));
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        all.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), opts.shutdownGraceMs ?? 10_000))),
      ]);
      clearTimeout(timer);
      if (!timedOut) return;
      for (const [msg, entry] of running) {
        entry.abandoned = true;
        nakNow(msg);
      }
      log.warn({ count: running.size, durable: spec.durable }, "in-flight messages handed back on shutdown");
    },
  };
}

/**
 * The consumer's span for one message: a child of the publisher's span (the traceparent in
 * its headers), so a job's handling sits in the trace of the request that queued it.
 */
function handlingSpan(msg: JsMsg, spec: ConsumerSpec) {
  const started = startSpan(`process ${spec.durable}`, {
    kind: SpanKind.CONSUMER,
    parent: extractTraceContext(msg.headers),
    attributes: {
      "messaging.system": "nats",
      "messaging.operation.type": "process",
      "messaging.destination.name": msg.subject,
      "messaging.consumer.group.name": spec.durable,
      "messaging.message.delivery_count": msg.info.deliveryCount,
    },
  })!;
  const requestId = msg.headers?.get(REQUEST_ID_HEADER);
  if (requestId) started.span.setAttribute(REQUEST_ID_ATTRIBUTE, requestId);
  return started;
}

/** `consume` for protobuf messages. */
export function consumeProto<D extends DescMessage>(
  nc: NatsConnection,
  spec: ConsumerSpec,
  schema: D,
  handler: Handler<MessageShape<D>>,
  opts: ConsumeOptions<MessageShape<D>>,
): Promise<ConsumeLoop> {
  return consume(nc, spec, (data) => fromBinary(schema, data), handler, opts);
}
