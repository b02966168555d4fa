import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfKind } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { MailEventSchema, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { deliverySourceNameOf } from "@mailroom/pipeline/delivery-source.js";
import type { InboundMail } from "./domain/inbound.js";
import type { SentDelivery } from "./domain/model.js";

export const SENT_DURABLE = "inbound-sent";
export const SENT_FILTER = eventsOfKind("sent");

/** A SENT event in domain terms; undefined when it lacks what a bounce would need. */
export function sentDeliveryOf(event: MailEvent): SentDelivery | undefined {
  const source = deliverySourceNameOf(event.source);
  if (!source || !event.deliveryId || !event.workspaceId || !event.recipient) return undefined;
  return {
    deliveryId: event.deliveryId,
    workspaceId: event.workspaceId,
    source,
    emailId: event.emailId,
    broadcastId: event.broadcastId,
    messageId: event.messageId,
    recipient: event.recipient,
    contactId: event.contactId,
    groupBy: event.groupBy,
    sentAt: event.occurredAt ? timestampDate(event.occurredAt) : new Date(),
    ...(event.otherRecipients.length ? { otherRecipients: [...event.otherRecipients] } : {}),
    ...(event.tags.length ? { tags: event.tags.map((t) => ({ name: t.name, value: t.value })) } : {}),
    ...(event.route ? { route: event.route } : {}),
  };
}

/**
 * JetStream transport: remembers every delivery the relay accepted (a durable consumer
 * of the SENT events shared by every inbound process), so a bounce naming only its
 * delivery id finds the workspace and recipient without asking anyone.
 */
export function consumeSentEvents(nc: NatsConnection, inbound: InboundMail, logger: Logger): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: SENT_DURABLE, filterSubjects: [SENT_FILTER], maxDeliver: 20, ackWaitMs: 30_000 },
    MailEventSchema,
    async (event) => {
      const delivery = sentDeliveryOf(event);
      if (delivery) await inbound.rememberSent(delivery);
      else logger.debug({ eventId: event.eventId }, "sent event without a delivery to remember");
      return ack();
    },
    { logger, concurrency: 32 },
  );
}
