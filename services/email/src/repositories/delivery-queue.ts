import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishProto } from "../../../kit/src/jetstream.js";
import { DeliveryJobSchema, DeliverySource } from "../../../../gen/mailroom/events/v1/events_pb.js";
import type { DeliveryJobData, DeliveryQueue } from "../domain/ports.js";

export const TRANSACTIONAL_SUBJECT = "mail.delivery.transactional";

/** Delivery jobs on JetStream; the msgID (delivery id) makes a repeated publish a no-op. */
export class JetStreamDeliveryQueue implements DeliveryQueue {
  constructor(private readonly js: JetStreamClient) {}

  async publish(job: DeliveryJobData): Promise<void> {
    const message = create(DeliveryJobSchema, {
      deliveryId: job.deliveryId,
      workspaceId: job.workspaceId,
      source: DeliverySource.TRANSACTIONAL,
      messageId: job.messageId,
      emailId: job.emailId,
      recipient: { email: job.recipient, variables: job.variables as JsonObject },
      fromEmail: job.fromEmail,
      fromName: job.fromName,
      replyTo: job.replyTo ?? "",
      contentRef: job.contentRef,
      groupBy: job.groupBy ?? "",
      enqueuedAt: timestampFromDate(job.enqueuedAt),
    });
    await publishProto(this.js, TRANSACTIONAL_SUBJECT, DeliveryJobSchema, message, job.deliveryId);
  }
}
