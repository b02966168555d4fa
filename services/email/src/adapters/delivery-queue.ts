import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { deliveryJobSubject, publishProto } from "../../../kit/src/jetstream.js";
import { DeliveryJobSchema, DeliverySource } from "../../../../gen/mailroom/events/v1/events_pb.js";
import type { DeliveryJobData, DeliveryQueue } from "../domain/ports.js";

export const TRANSACTIONAL_SUBJECT = deliveryJobSubject("transactional");

/** Delivery jobs on JetStream; the msgID (delivery id) makes a repeated publish a no-op. */
export class JetStreamDeliveryQueue implements DeliveryQueue {
  constructor(private readonly js: JetStreamClient) {}

  async publish(job: DeliveryJobData): Promise<void> {
    // Emails stored before Reply-To lists existed hold one string.
    const replyTo: string[] = [job.replyTo ?? []].flat();
    const message = create(DeliveryJobSchema, {
      deliveryId: job.deliveryId,
      workspaceId: job.workspaceId,
      source: DeliverySource.TRANSACTIONAL,
      messageId: job.messageId,
      emailId: job.emailId,
      recipient: { email: job.recipient, variables: job.variables as JsonObject },
      fromEmail: job.fromEmail,
      fromName: job.fromName,
      // The first address also in the single field, for workers that predate the list.
      replyTo: replyTo[0] ?? "",
      replyToList: replyTo,
      contentRef: job.contentRef,
      groupBy: job.groupBy ?? "",
      enqueuedAt: timestampFromDate(job.enqueuedAt),
      requestId: job.requestId ?? "",
    });
    await publishProto(this.js, TRANSACTIONAL_SUBJECT, DeliveryJobSchema, message, job.deliveryId);
  }
}
