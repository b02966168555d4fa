import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { deliveryJobSubject, publishProto } from "../../../kit/src/jetstream.js";
import { DeliveryJobSchema, DeliverySource } from "../../../../gen/mailroom/events/v1/events_pb.js";
import type { DeliveryJobData, DeliveryQueue } from "../domain/ports.js";

/**
 * Broadcast jobs go on the broadcast lane (paced, possibly huge; delivery consumes it apart
 * from transactional mail). Test sends go on the transactional lane (`mail.delivery.test`):
 * a person is waiting for them, and they must not queue behind a running broadcast.
 */
const subjectOf = (job: DeliveryJobData) => (job.test ? deliveryJobSubject("test") : deliveryJobSubject("broadcast", job.broadcastId));

/** Delivery jobs on JetStream; msgID = delivery id makes a repeated publish a no-op. */
export class JetStreamDeliveryQueue implements DeliveryQueue {
  constructor(private readonly js: JetStreamClient) {}

  async publish(job: DeliveryJobData): Promise<void> {
    const message = create(DeliveryJobSchema, {
      deliveryId: job.deliveryId,
      workspaceId: job.workspaceId,
      source: job.test ? DeliverySource.BROADCAST_TEST : DeliverySource.BROADCAST,
      messageId: job.messageId,
      broadcastId: job.broadcastId,
      recipient: { email: job.recipient.email, contactId: job.recipient.contactId, variables: job.recipient.variables as JsonObject },
      fromEmail: job.fromEmail,
      fromName: job.fromName,
      replyTo: job.replyTo,
      contentRef: job.contentRef,
      subjectPrefix: job.subjectPrefix,
      enqueuedAt: timestampFromDate(job.enqueuedAt),
    });
    await publishProto(this.js, subjectOf(job), DeliveryJobSchema, message, job.deliveryId);
  }
}
