/**
 * JetStream transport: delivery jobs (protobuf DeliveryJob on MAIL_DELIVERY) and a
 * broadcast's page jobs (DeliveryPage, told apart by subject) are decoded into domain jobs
 * and pages and handed to the deliverer, through kit's one consumer loop, on two lanes
 * (transactional, broadcast).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { JetStreamApiCodes, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { backoffMs, consume, drop, isJetStreamApiError, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { runWithRequestContext } from "@mailroom/kit/request-context.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { DeliveryJobSchema, DeliveryPageSchema, type DeliveryJob, type DeliveryPage } from "@mailroom/proto/events/v1/events_pb.js";
import { deliverySourceNameOf } from "@mailroom/pipeline/delivery-source.js";
import { isPageSubject } from "@mailroom/pipeline/delivery-jobs.js";
import { DELIVERY_DURABLE, DELIVERY_LANES, DELIVERY_STREAM, type DeliveryLane } from "@mailroom/pipeline/subjects.js";
import type { Deliverer } from "./domain/deliverer.js";
import type { Job, JobSource, Page, Variables } from "./domain/job.js";

/** Jobs whose handler keeps throwing are given up after this many requeues. */
const MAX_ERROR_REQUEUES = 3;

const NO_VARIABLES: Variables = Object.freeze({});

/** Merge values from their JSON bytes (empty: none). */
export function variablesOf(json: Uint8Array): Variables {
  if (json.length === 0) return NO_VARIABLES;
  const parsed: unknown = JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString("utf8"));
  return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Variables) : NO_VARIABLES;
}

export function toJob(j: DeliveryJob): Job | undefined {
  const source = deliverySourceNameOf(j.source);
  if (!source) return undefined;
  const r = j.recipient;
  // variables_json from current publishers; the Struct from jobs published by older versions.
  const variables = r && r.variablesJson.length > 0 ? variablesOf(r.variablesJson) : (r?.variables ?? NO_VARIABLES);
  return {
    deliveryId: j.deliveryId,
    workspaceId: j.workspaceId,
    source,
    messageId: j.messageId,
    emailId: j.emailId,
    broadcastId: j.broadcastId,
    recipient: { email: r?.email ?? "", contactId: r?.contactId ?? "", variables },
    fromEmail: j.fromEmail,
    fromName: j.fromName,
    replyTo: j.replyTo,
    replyToList: j.replyToList,
    contentRef: j.contentRef,
    subjectPrefix: j.subjectPrefix,
    groupBy: j.groupBy,
    notBefore: j.notBefore ? timestampMs(j.notBefore) : undefined,
    requestId: j.requestId,
    cc: j.cc,
    bcc: j.bcc,
    tags: j.tags.map((t) => ({ name: t.name, value: t.value })),
    ...(j.content.length ? { content: j.content } : {}),
  };
}

/**
 * A page's recipients as jobs sharing the page's fields. A recipient whose merge values do
 * not parse still becomes a job (without them), so it reaches an outcome with the rest.
 */
export function toPage(p: DeliveryPage): Page | undefined {
  const source = deliverySourceNameOf(p.source);
  if (!source) return undefined;
  const replyTo = p.replyToList[0] ?? "";
  const jobs: Job[] = new Array(p.recipients.length);
  for (let i = 0; i < p.recipients.length; i++) {
    const r = p.recipients[i];
    let variables = NO_VARIABLES;
    try {
      variables = variablesOf(r.variablesJson);
    } catch {
      // kept empty: a merge value missing is better than a recipient never reaching an outcome
    }
    jobs[i] = {
      deliveryId: r.deliveryId,
      workspaceId: p.workspaceId,
      source,
      messageId: r.messageId,
      emailId: "",
      broadcastId: p.broadcastId,
      recipient: { email: r.email, contactId: r.contactId, variables },
      fromEmail: p.fromEmail,
      fromName: p.fromName,
      replyTo,
      replyToList: p.replyToList,
      contentRef: p.contentRef,
      subjectPrefix: p.subjectPrefix,
      groupBy: "",
      requestId: p.requestId,
    };
  }
  return { pageId: p.pageId, workspaceId: p.workspaceId, broadcastId: p.broadcastId, contentRef: p.contentRef, fromEmail: p.fromEmail, fromName: p.fromName, jobs };
}

export interface LaneOptions {
  /** Jobs handled at once by this process. */
  concurrency: number;
  /** Jobs handed out and not yet acked, across every process (JetStream max_ack_pending). */
  maxAckPending: number;
}

export interface DeliveryConsumerOptions {
  lanes: Record<DeliveryLane, LaneOptions>;
  ackWaitMs: number;
  maxDeliver: number;
  /** On stop, time given to in-flight jobs before they are nak'ed for another process. */
  shutdownGraceMs: number;
  logger: Logger;
}

/**
 * The two lanes (DESIGN §3): transactional jobs and broadcast jobs on separate durable
 * consumers, each with its own concurrency and max_ack_pending, so a paused, paced or huge
 * broadcast never holds the slots a password reset needs. The single consumer of earlier
 * releases is removed first (a work-queue stream refuses overlapping filters); its jobs
 * stay in the stream and the lanes take them.
 */
export async function startDeliveryConsumers(nc: NatsConnection, deliverer: Deliverer, opts: DeliveryConsumerOptions): Promise<ConsumeLoop> {
  await removeSingleLaneConsumer(nc, opts.logger);
  const loops: ConsumeLoop[] = [];
  try {
    for (const lane of Object.keys(DELIVERY_LANES) as DeliveryLane[]) {
      loops.push(await startLane(nc, deliverer, lane, opts));
    }
  } catch (err) {
    await Promise.all(loops.map((l) => l.stop()));
    throw err;
  }
  return {
    get inFlight() {
      return loops.reduce((n, l) => n + l.inFlight, 0);
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}

/** Deletes the pre-lanes `delivery` consumer if it is still there; true when it was. */
export async function removeSingleLaneConsumer(nc: NatsConnection, logger: Logger): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.consumers.delete(DELIVERY_STREAM, DELIVERY_DURABLE);
  } catch (err) {
    // Already gone (or removed by another process starting at the same time).
    if (isJetStreamApiError(err, JetStreamApiCodes.ConsumerNotFound)) return false;
    throw err;
  }
  logger.info(
    { stream: DELIVERY_STREAM, removed: DELIVERY_DURABLE, lanes: Object.values(DELIVERY_LANES).map((l) => l.durable) },
    "single delivery consumer replaced by the transactional and broadcast lanes; queued jobs stay in the stream",
  );
  return true;
}

/**
 * One lane's durable consumer with a bounded max_deliver. Pauses and rate waits are naks
 * and count as deliveries, so a job that would run out of them is requeued at the end of
 * the queue rather than given up.
 */
function startLane(nc: NatsConnection, deliverer: Deliverer, lane: DeliveryLane, opts: DeliveryConsumerOptions): Promise<ConsumeLoop> {
  const { durable, filter } = DELIVERY_LANES[lane];
  const { concurrency, maxAckPending } = opts.lanes[lane];
  return consume(
    nc,
    {
      stream: DELIVERY_STREAM,
      durable,
      filterSubjects: [filter],
      maxDeliver: opts.maxDeliver,
      ackWaitMs: opts.ackWaitMs,
      maxAckPending,
    },
    // Decoded by the handler, which knows the subject: a page job or a single job.
    (data) => data,
    async (data, ctx) => {
      if (isPageSubject(ctx.subject)) {
        let page: Page | undefined;
        try {
          page = toPage(fromBinary(DeliveryPageSchema, data));
        } catch (err) {
          opts.logger.error({ err, subject: ctx.subject }, "undecodable page job");
          return drop("undecodable");
        }
        if (!page) return drop("unknown delivery source");
        // Not run in a request context: AsyncLocalStorage's promise hooks would cost every
        // recipient's sends; the page's lines name the page and delivery ids instead.
        return deliverer.handlePage(page, ctx);
      }
      let message: DeliveryJob;
      try {
        message = fromBinary(DeliveryJobSchema, data);
      } catch (err) {
        opts.logger.error({ err, subject: ctx.subject }, "undecodable delivery job");
        return drop("undecodable");
      }
      // Each job runs in the context of the API request that produced it: every line logged
      // while delivering it carries that request id.
      return runWithRequestContext(message.requestId, async () => {
        const job = toJob(message);
        if (!job) return drop("unknown delivery source");
        const decision = await deliverer.handle(job, ctx);
        opts.logger.debug({ deliveryId: job.deliveryId, emailId: job.emailId, attempt: ctx.deliveryCount, decision: decision.kind }, "delivery job handled");
        return decision;
      });
    },
    {
      logger: opts.logger,
      concurrency,
      shutdownGraceMs: opts.shutdownGraceMs,
      errorBackoffMs: (attempt) => backoffMs(attempt, 1_000, 60_000),
      requeue: { maxOnError: MAX_ERROR_REQUEUES },
    },
  );
}
