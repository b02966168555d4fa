import type { NatsConnection } from "@nats-io/transport-node";
import { ack, consumeProto, EVENTS_STREAM, type ConsumeLoop } from "../../kit/src/jetstream.js";
import type { Logger } from "../../kit/src/logger.js";
import { MailEventSchema, MailEventType, type MailEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import { applyOutcome, type DeliveryOutcome } from "./domain/outcomes.js";
import type { Clock, EmailRepository } from "./domain/ports.js";

export const EVENTS_DURABLE = "email-events";
export const EVENTS_FILTER = "mail.events.transactional.>";

/** A delivery event in domain terms. */
export function outcomeOf(event: MailEvent): DeliveryOutcome {
  const kind: DeliveryOutcome["kind"] =
    event.type === MailEventType.SENT
      ? "sent"
      : event.type === MailEventType.BOUNCED
        ? "bounced"
        : event.type === MailEventType.FAILED
          ? "failed"
          : event.type === MailEventType.SUPPRESSED
            ? "suppressed"
            : "other";
  return { emailId: event.emailId || event.deliveryId, kind, detail: event.detail, smtpCode: event.smtpCode || undefined };
}

/**
 * Follows the outcomes of transactional deliveries (durable consumer shared by every
 * email-service process) and moves each email's status along.
 */
export function consumeDeliveryEvents(
  nc: NatsConnection,
  emails: EmailRepository,
  clock: Clock,
  logger: Logger,
): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: EVENTS_DURABLE, filterSubjects: [EVENTS_FILTER], maxDeliver: 20, ackWaitMs: 30_000 },
    MailEventSchema,
    async (event) => {
      const outcome = outcomeOf(event);
      if (outcome.kind !== "other" && outcome.emailId) {
        const changed = await applyOutcome(emails, clock, outcome);
        logger.debug({ emailId: outcome.emailId, outcome: outcome.kind, changed }, "delivery outcome");
      }
      return ack();
    },
    { logger, concurrency: 32 },
  );
}
