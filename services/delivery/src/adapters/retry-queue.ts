import type { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { variablesJson } from "@mailroom/pipeline/work.js";
import type { Job } from "../domain/job.js";
import type { RetryQueue } from "../domain/ports.js";

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
      source: job.source,
      messageId: job.messageId,
      emailId: job.emailId,
      broadcastId: job.broadcastId,
      recipient: { email: job.recipient.email, contactId: job.recipient.contactId, variablesJson: variablesJson(job.recipient.variables) },
      fromEmail: job.fromEmail,
      fromName: job.fromName,
      // The list supersedes the single field; a job from an older publisher has only that.
      replyTo: job.replyToList?.length ? job.replyToList : job.replyTo ? [job.replyTo] : [],
      contentRef: job.contentRef,
      subjectPrefix: job.subjectPrefix,
      groupBy: job.groupBy,
      requestId: job.requestId ?? "",
      enqueuedAt: new Date(now),
      notBefore: new Date(Math.max(now, notBefore)),
      ...(job.content ? { content: job.content } : {}),
    });
  }
}
