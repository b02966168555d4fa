import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { DeliverySource } from "../../../../gen/mailroom/events/v1/events_pb.js";
import { variablesJson, type DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import type { Job, JobSource } from "../domain/job.js";
import type { RetryQueue } from "../domain/ports.js";

const SOURCE: Record<JobSource, DeliverySource> = {
  transactional: DeliverySource.TRANSACTIONAL,
  broadcast: DeliverySource.BROADCAST,
  test: DeliverySource.BROADCAST_TEST,
};

/**
 * A page's recipient to retry, as a DeliveryJob of its own through the pipeline's one job
 * publisher (msgID = delivery id: handing the same recipient on again is deduplicated).
 */
export class JetStreamRetryQueue implements RetryQueue {
  constructor(private readonly publisher: Pick<DeliveryJobPublisher, "publishJob">) {}

  handOn(job: Job, notBefore: number): Promise<void> {
    const now = Date.now();
    return this.publisher.publishJob({
      deliveryId: job.deliveryId,
      workspaceId: job.workspaceId,
      source: SOURCE[job.source],
      messageId: job.messageId,
      emailId: job.emailId,
      broadcastId: job.broadcastId,
      recipient: { email: job.recipient.email, contactId: job.recipient.contactId, variablesJson: variablesJson(job.recipient.variables) },
      fromEmail: job.fromEmail,
      fromName: job.fromName,
      replyTo: job.replyTo,
      replyToList: job.replyToList ? [...job.replyToList] : [],
      contentRef: job.contentRef,
      subjectPrefix: job.subjectPrefix,
      groupBy: job.groupBy,
      requestId: job.requestId ?? "",
      enqueuedAt: timestampFromMs(now),
      notBefore: timestampFromMs(Math.max(now, notBefore)),
    });
  }
}
