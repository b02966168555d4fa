import type { NatsConnection } from "@nats-io/transport-node";
import { ack, consumeProto, EVENTS_STREAM, EVENTS_SUBJECTS, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { AppError } from "@mailroom/kit/errors.js";
import { MailEventSchema, MailEventType, type MailEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import type { MailOutcome, MailOutcomes } from "./domain/outcomes.js";

export const OUTCOMES_DURABLE = "directory-outcomes";
/**
 * nats-server 2.9 allows one filter subject per consumer: every mail event, the kinds that
 * matter picked below (bounced, complained, unsubscribed; the rest is acked unread).
 */
export const OUTCOMES_FILTER = EVENTS_SUBJECTS;

/** The outcome a MailEvent reports, or undefined when it changes nothing about the recipient. */
export function mailOutcomeOf(event: MailEvent): MailOutcome | undefined {
  const base = { workspaceId: event.workspaceId, recipient: event.recipient, detail: event.detail };
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
 * JetStream transport: one durable consumer shared by every directory process turns
 * bounces, complaints and unsubscribes into suppressions and contact status.
 */
export function consumeMailOutcomes(nc: NatsConnection, outcomes: MailOutcomes, logger: Logger): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: OUTCOMES_DURABLE, filterSubjects: [OUTCOMES_FILTER], maxDeliver: 20, ackWaitMs: 30_000 },
    MailEventSchema,
    async (event) => {
      const outcome = mailOutcomeOf(event);
      if (!outcome) return ack();
      try {
        if ((await outcomes.record(outcome)) === "ignored") logger.debug({ eventId: event.eventId }, "outcome event without a workspace or a valid recipient");
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
