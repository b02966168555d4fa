import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { DeliverySource, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { MailEventPublisher } from "@mailroom/pipeline/mail-events.js";
import type { DeliverySource as Source, InboundEvent } from "../domain/model.js";
import type { MailEvents } from "../domain/ports.js";

export const SOURCE: Record<Source, DeliverySource> = {
  transactional: DeliverySource.TRANSACTIONAL,
  broadcast: DeliverySource.BROADCAST,
  test: DeliverySource.BROADCAST_TEST,
};

const TYPE: Record<InboundEvent["type"], MailEventType> = {
  bounced: MailEventType.BOUNCED,
  complained: MailEventType.COMPLAINED,
  unsubscribed: MailEventType.UNSUBSCRIBED,
  delivered: MailEventType.DELIVERED,
  deferred: MailEventType.DEFERRED,
  replied: MailEventType.REPLIED,
};

/**
 * Inbound's events (bounces, complaints, unsubscribes, provider-confirmed deliveries, replies) as MailEvents, through the pipeline's
 * one MailEvent publisher (subject mail.events.<source>.<type>, msgID = event id).
 */
export class JetStreamMailEvents implements MailEvents {
  private readonly publisher: MailEventPublisher;

  constructor(js: JetStreamClient) {
    this.publisher = new MailEventPublisher(js);
  }

  async publish(e: InboundEvent): Promise<void> {
    await this.publisher.publish({
      eventId: e.eventId,
      type: TYPE[e.type],
      workspaceId: e.workspaceId,
      source: SOURCE[e.source],
      deliveryId: e.deliveryId,
      emailId: e.emailId,
      broadcastId: e.broadcastId,
      messageId: e.messageId,
      recipient: e.recipient,
      contactId: e.contactId,
      detail: e.detail,
      smtpCode: e.smtpCode,
      groupBy: e.groupBy,
      permanent: e.permanent,
      enhancedStatus: e.enhancedStatus,
      tags: e.tags ?? [],
      route: e.route ?? "",
      occurredAt: timestampFromDate(e.occurredAt),
    });
  }
}
