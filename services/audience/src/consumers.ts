import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { JetStreamApiCodes, jetstreamManager } from "@nats-io/jetstream";
import { ack, consumeProto, isJetStreamApiError, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfKind } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { AppError } from "@mailroom/kit/errors.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import type { MailOutcome, MailOutcomes } from "./domain/outcomes.js";

/**
 * The kinds of mail event that change a recipient, each on a durable of its own: nats-server
 * 2.9 takes one filter subject per consumer, and one consumer of every event (the durable
 * below, of earlier releases) decoded and acked every `sent` of every broadcast unread.
 */
export const OUTCOME_KINDS = ["bounced", "complained", "unsubscribed"] as const;
export const outcomesDurable = (kind: (typeof OUTCOME_KINDS)[number]) => `directory-${kind}`;
/** The single durable of every mail event (filter mail.events.>) that the three above replace. */
export const OUTCOMES_DURABLE = "directory-outcomes";

/** The outcome a MailEvent reports, or undefined when it changes nothing about the recipient. */
export function mailOutcomeOf(event: MailEvent): MailOutcome | undefined {
  const base = {
    workspaceId: event.workspaceId, recipient: event.recipient, detail: event.detail, occurredAt: event.occurredAt ? timestampDate(event.occurredAt) : undefined,
    source: event.emailId || event.broadcastId || undefined,
  };
  switch (event.type) {
    case MailEventType.BOUNCED:
      // A hard bounce: permanent (inbound DSNs), or a 5xx reply to our own SMTP transaction.
      return event.permanent || (event.smtpCode >= 500 && event.smtpCode < 600) ? { kind: "hard_bounce", ...base } : undefined;
    case MailEventType.COMPLAINED:
      return { kind: "complaint", ...base };
    case MailEventType.UNSUBSCRIBED:
      return { kind: "unsubscribed", ...base };
    default:
      return undefined;
  }
}

/**
 * JetStream transport: durable consumers shared by every audience process turn bounces,
 * complaints and unsubscribes into suppressions and contact status. On the first start after
 * an upgrade the per-kind durables begin where the single durable of earlier releases had
 * acknowledged up to (nothing is replayed, nothing skipped), and that durable is removed.
 */
export async function consumeMailOutcomes(nc: NatsConnection, outcomes: MailOutcomes, logger: Logger): Promise<ConsumeLoop> {
  const jsm = await jetstreamManager(nc);
  let startSeq: number | undefined;
  try {
    startSeq = (await jsm.consumers.info(EVENTS_STREAM, OUTCOMES_DURABLE)).ack_floor.stream_seq + 1;
  } catch (err) {
    if (!isJetStreamApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
  }
  const loops: ConsumeLoop[] = [];
  try {
    for (const kind of OUTCOME_KINDS) loops.push(await consumeKind(nc, kind, outcomes, logger, startSeq));
  } catch (err) {
    await Promise.all(loops.map((l) => l.stop()));
    throw err;
  }
  if (startSeq !== undefined) {
    await jsm.consumers.delete(EVENTS_STREAM, OUTCOMES_DURABLE).catch((err: unknown) => {
      if (!isJetStreamApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    });
    logger.info({ removed: OUTCOMES_DURABLE, startSeq }, "mail outcomes now consumed per kind; the single durable is removed");
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

function consumeKind(nc: NatsConnection, kind: (typeof OUTCOME_KINDS)[number], outcomes: MailOutcomes, logger: Logger, startSeq?: number): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: outcomesDurable(kind), filterSubjects: [eventsOfKind(kind)], maxDeliver: 20, ackWaitMs: 30_000, startSeq },
    MailEventSchema,
    async (event) => {
      const outcome = mailOutcomeOf(event);
      if (!outcome) return ack();
      try {
        const result = await outcomes.record(outcome);
        if (result === "ignored") logger.debug({ eventId: event.eventId }, "outcome event without a workspace or a valid recipient");
        if (result === "stale") logger.info({ eventId: event.eventId, workspaceId: event.workspaceId }, "unsubscribe older than the contact's last status change: not applied");
      } catch (err) {
        // An event the domain refuses (a malformed workspace id) will not get better; anything else is retried.
        if (!(err instanceof AppError) || err.httpStatus >= 500) throw err;
        logger.warn({ eventId: event.eventId, code: err.code }, "outcome event refused");
      }
      return ack();
    },
    { logger, concurrency: 16 },
  );
}
