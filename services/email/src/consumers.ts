import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfSource } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { recordEvent, type OutcomeDeps, type OutcomeEvent } from "./domain/outcomes.js";

export const EVENTS_DURABLE = "email-events";
export const EVENTS_FILTER = eventsOfSource("transactional");

const KINDS: Partial<Record<MailEventType, OutcomeEvent["kind"]>> = {
  [MailEventType.SENT]: "sent",
  [MailEventType.DEFERRED]: "deferred",
  [MailEventType.BOUNCED]: "bounced",
  [MailEventType.FAILED]: "failed",
  [MailEventType.SUPPRESSED]: "suppressed",
  [MailEventType.OPENED]: "opened",
  [MailEventType.CLICKED]: "clicked",
  [MailEventType.COMPLAINED]: "complained",
  [MailEventType.UNSUBSCRIBED]: "unsubscribed",
  // A relay provider's report that the recipient's server took it: a timeline entry only.
  [MailEventType.DELIVERED]: "confirmed",
  // The inbound unit received a reply to it (DESIGN §10.4): a timeline entry, the status unchanged.
  [MailEventType.REPLIED]: "replied",
};

/** A MailEvent in domain terms; null for kinds the email service does not follow. */
export function outcomeEventOf(event: MailEvent, now: Date): OutcomeEvent | null {
  const kind = KINDS[event.type];
  const emailId = event.emailId || event.deliveryId;
  if (!kind || !emailId) return null;
  return {
    // Events without an id (older publishers) are told apart by what they carry.
    eventId: event.eventId || `${event.type}:${emailId}:${event.attempt}:${event.url}`,
    emailId,
    kind,
    at: event.occurredAt ? timestampDate(event.occurredAt) : now,
    detail: event.detail || undefined,
    smtpCode: event.smtpCode || undefined,
    permanent: event.permanent,
    url: event.url || undefined,
    route: event.route || undefined,
    ...(kind === "replied" && event.detail ? { receivedId: event.detail } : {}),
  };
}

/**
 * JetStream transport: follows every event of transactional emails (delivery outcomes and
 * tracking; a durable consumer shared by every email-service process), decodes each into a
 * domain event and lets the domain record it. Redeliveries are harmless: the domain counts
 * each event id once.
 */
export function consumeMailEvents(nc: NatsConnection, deps: OutcomeDeps, logger: Logger): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: EVENTS_DURABLE, filterSubjects: [EVENTS_FILTER], maxDeliver: 20, ackWaitMs: 30_000 },
    MailEventSchema,
    async (message) => {
      const event = outcomeEventOf(message, deps.clock.now());
      if (event) {
        const applied = await recordEvent(deps, event);
        logger.debug({ emailId: event.emailId, kind: event.kind, applied }, "email event");
      }
      return ack();
    },
    { logger, concurrency: 32 },
  );
}
