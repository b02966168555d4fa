/**
 * The email service's delivery queue: publishes an email's delivery job, then its EMAIL_SENT
 * webhook event (DESIGN §9.2: the email is accepted and queued, the record's SENT). Both go
 * to JetStream with a message id derived from the email id (the job's delivery id is the
 * email id; the event's id hashes the email id and the event name), so a publish repeated
 * after a failure or a lease that ran out (the Publisher defers the claim and retries when
 * this throws) is deduplicated by the streams, and past their window by the webhooks unit
 * (one delivery per event id and webhook).
 */
import { createHash } from "node:crypto";
import type { DeliveryJobSpec } from "@mailroom/pipeline/work.js";
import type { WebhookEventSpec } from "@mailroom/pipeline/webhook-events.js";
import type { DeliveryQueue } from "../domain/ports.js";

/** The id of a transactional email's EMAIL_SENT event: the same for every publish of that email. */
export function emailSentEventId(emailId: string): string {
  return `evt_${createHash("sha256").update(`${emailId}\u0000EMAIL_SENT`).digest("hex").slice(0, 32)}`;
}

/** The EMAIL_SENT webhook event of a queued transactional job; `data` as the other email events' (webhooks payloadOf). */
export function emailSentEventOf(job: DeliveryJobSpec): WebhookEventSpec {
  const emailId = job.emailId || job.deliveryId;
  const data: Record<string, unknown> = { source: job.source, emailId };
  if (job.messageId) data.messageId = job.messageId;
  if (job.recipient.email) data.to = job.recipient.email;
  if (job.recipient.contactId) data.contactId = job.recipient.contactId;
  if (job.groupBy) data.groupBy = job.groupBy;
  // The client's shape, as the other email events' webhooks carry them (DESIGN §9.2).
  if (job.tags?.length) data.tags = job.tags.map((t) => ({ name: t.name, value: t.value }));
  return { eventId: emailSentEventId(emailId), type: "EMAIL_SENT", workspaceId: job.workspaceId, occurredAt: job.enqueuedAt, data };
}

export class QueueWithSentEvents implements DeliveryQueue {
  constructor(
    private readonly jobs: DeliveryQueue,
    private readonly events: { publish(spec: WebhookEventSpec): Promise<void> },
  ) {}

  /** Resolves once both the job and its EMAIL_SENT event are stored; throws (the caller retries both) otherwise. */
  async publishJob(job: DeliveryJobSpec): Promise<void> {
    await this.jobs.publishJob(job);
    if (job.source === "transactional") await this.events.publish(emailSentEventOf(job));
  }
}
