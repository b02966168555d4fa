import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishProto } from "../../kit/src/jetstream.js";
import {
  DeliverySource,
  MailEventSchema,
  MailEventType,
} from "../../../gen/mailroom/events/v1/events_pb.js";
import type { JobSource } from "./job.js";
import { outcomeEventId } from "./outcome.js";
import type { EventPublisher, OutcomeEvent, OutcomeType } from "./repositories.js";

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

export function jobSourceOf(source: DeliverySource): JobSource | undefined {
  if (source === DeliverySource.TRANSACTIONAL) return "transactional";
  if (source === DeliverySource.BROADCAST) return "broadcast";
  if (source === DeliverySource.BROADCAST_TEST) return "test";
  return undefined;
}

/** Subject of an outcome: mail.events.<transactional|broadcast|test>.<sent|deferred|bounced|failed>. */
export function eventSubject(source: JobSource, type: OutcomeType): string {
  return `mail.events.${source}.${type}`;
}

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
