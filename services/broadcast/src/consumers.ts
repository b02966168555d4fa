import type { NatsConnection } from "@nats-io/transport-node";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfSource } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import type { OutcomeKind } from "./domain/model.js";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { applyEvents, type BroadcastEvent, type OutcomeDeps } from "./domain/outcomes.js";

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
  // A reply the inbound unit matched to the recipient's message: counted once per recipient.
  [MailEventType.REPLIED]: "replied",
};

/** A MailEvent in domain terms; undefined for kinds the broadcast does not count. */
export function broadcastEventOf(e: MailEvent): BroadcastEvent | undefined {
  const kind = KIND[e.type];
  if (!kind || !e.broadcastId) return undefined;
  return { kind, broadcastId: e.broadcastId, deliveryId: e.deliveryId, contactId: e.contactId, messageId: e.messageId };
}

/** Events handled at once: the batch a broadcast's counters are written for grows up to this. */
const EVENTS_IN_FLIGHT = 512;

/**
 * Durable consumer shared by every broadcast process: counts outcomes, completes broadcasts.
 * Events of one broadcast that arrive while its previous batch is being written are applied
 * together (one ledger round, one counter update), and each is acked once its batch is stored.
 */
export function consumeBroadcastEvents(nc: NatsConnection, deps: OutcomeDeps, logger: Logger): Promise<ConsumeLoop> {
  const batches = new Coalescer<BroadcastEvent, void>(async (broadcastId, events) => {
    await applyEvents(deps, broadcastId, events);
    return events.map(() => undefined);
  });
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: EVENTS_DURABLE, filterSubjects: [EVENTS_FILTER], maxDeliver: 20, ackWaitMs: 30_000, maxAckPending: 4 * EVENTS_IN_FLIGHT },
    MailEventSchema,
    async (message) => {
      const event = broadcastEventOf(message);
      if (event) await batches.run(event.broadcastId, event);
      return ack();
    },
    { logger, concurrency: EVENTS_IN_FLIGHT },
  );
}
