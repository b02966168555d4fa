import type { NatsConnection } from "@nats-io/transport-node";
import { ack, consumeProto, EVENTS_STREAM, eventsOfSource, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { MailEventSchema, MailEventType, type MailEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import type { OutcomeKind } from "./domain/model.js";
import { applyEvent, type BroadcastEvent, type OutcomeDeps } from "./domain/outcomes.js";

export const EVENTS_DURABLE = "broadcast-events";
/** Outcomes and tracking of broadcast messages (test sends publish on mail.events.test.>). */
export const EVENTS_FILTER = eventsOfSource("broadcast");

const KIND: Partial<Record<MailEventType, OutcomeKind>> = {
  [MailEventType.SENT]: "sent",
  [MailEventType.DEFERRED]: "deferred",
  [MailEventType.BOUNCED]: "bounced",
  [MailEventType.FAILED]: "failed",
  [MailEventType.SUPPRESSED]: "suppressed",
  [MailEventType.OPENED]: "opened",
  [MailEventType.CLICKED]: "clicked",
  [MailEventType.UNSUBSCRIBED]: "unsubscribed",
};

/** A MailEvent in domain terms; undefined for kinds the broadcast does not count. */
export function broadcastEventOf(e: MailEvent): BroadcastEvent | undefined {
  const kind = KIND[e.type];
  if (!kind || !e.broadcastId) return undefined;
  return { kind, broadcastId: e.broadcastId, deliveryId: e.deliveryId, contactId: e.contactId, messageId: e.messageId };
}

/** Durable consumer shared by every broadcast process: counts outcomes, completes broadcasts. */
export function consumeBroadcastEvents(nc: NatsConnection, deps: OutcomeDeps, logger: Logger): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: EVENTS_DURABLE, filterSubjects: [EVENTS_FILTER], maxDeliver: 20, ackWaitMs: 30_000 },
    MailEventSchema,
    async (message) => {
      const event = broadcastEventOf(message);
      if (event) await applyEvent(deps, event);
      return ack();
    },
    { logger, concurrency: 32 },
  );
}
