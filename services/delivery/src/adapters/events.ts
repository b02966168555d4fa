import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { eventSubject, publishProto } from "../../../kit/src/jetstream.js";
import {
  DeliverySource,
  MailEventSchema,
  MailEventType,
} from "../../../../gen/mailroom/events/v1/events_pb.js";
import type { JobSource } from "../domain/job.js";
import { outcomeEventId } from "../domain/outcome.js";
import type { EventPublisher, OutcomeEvent, OutcomeType } from "../domain/ports.js";

const SOURCE: Record<JobSource, DeliverySource> = {
  transactional: DeliverySource.TRANSACTIONAL,
  broadcast: DeliverySource.BROADCAST,
  test: DeliverySource.BROADCAST_TEST,
};

const TYPE: Record<OutcomeType, MailEventType> = {
  sent: MailEventType.SENT,
  deferred: MailEventType.DEFERRED,
  bounced: MailEventType.BOUNCED,
  failed: MailEventType.FAILED,
};

/** Publishes outcomes as MailEvent protobufs on MAIL_EVENTS, with derived msgIDs. */
export class JetStreamEventPublisher implements EventPublisher {
  constructor(private readonly js: JetStreamClient) {}

  async publish(e: OutcomeEvent): Promise<void> {
    const eventId = outcomeEventId(e.deliveryId, e.type, e.attempt);
    const event = create(MailEventSchema, {
      eventId,
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
      attempt: e.attempt,
      groupBy: e.groupBy,
      occurredAt: timestampNow(),
    });
    await publishProto(this.js, eventSubject(e.source, e.type), MailEventSchema, event, eventId);
  }
}
