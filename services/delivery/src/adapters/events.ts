import { timestampNow } from "@bufbuild/protobuf/wkt";
import { DeliverySource, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import type { MailEventPublisher } from "@mailroom/pipeline/mail-events.js";
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

/**
 * Outcomes as MailEvents through the pipeline's one publisher (DESIGN §9.1), with the
 * derived event id as msgID, so a republished outcome is deduplicated.
 */
export class OutcomeEventPublisher implements EventPublisher {
  constructor(private readonly publisher: Pick<MailEventPublisher, "publish">) {}

  publish(e: OutcomeEvent): Promise<void> {
    return this.publisher.publish({
      eventId: outcomeEventId(e.deliveryId, e.type, e.attempt),
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
      permanent: e.permanent ?? false,
      groupBy: e.groupBy,
      tags: e.tags?.map((t) => ({ name: t.name, value: t.value })) ?? [],
      otherRecipients: [...(e.otherRecipients ?? [])],
      route: e.route ?? "",
      occurredAt: timestampNow(),
    });
  }
}
