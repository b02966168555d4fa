import { Coalescer } from "../../../kit/src/coalesce.js";
import type { StoredEmail } from "./model.js";
import type { Clock, DeliveryJobData, DeliveryQueue, EmailStore, Logger } from "./ports.js";

/** The delivery job of one transactional email: one recipient, so one delivery. */
export function jobOf(email: StoredEmail, now: Date, requestId = ""): DeliveryJobData {
  return {
    deliveryId: email.id,
    workspaceId: email.workspaceId,
    emailId: email.id,
    messageId: email.messageId,
    recipient: email.recipient,
    variables: email.variables,
    fromEmail: email.fromEmail,
    fromName: email.fromName,
    replyTo: email.replyTo,
    groupBy: email.groupBy,
    contentRef: `email:${email.id}`,
    enqueuedAt: now,
    requestId,
  };
}

/**
 * Publishes emails this process has claimed. The claim (a CAS in the store) makes one
 * process responsible; the queue's deduplication by delivery id and the delivery
 * service's own claim cover a publish repeated after a lease ran out.
 */
export class Publisher {
  /** Marks of emails published meanwhile go to the store as one update. */
  private readonly marks = new Coalescer<string, void>(async (_owner, ids) => {
    await this.emails.markPublished(ids, this.owner, this.clock.now());
    return ids.map(() => undefined);
  });

  constructor(
    private readonly emails: EmailStore,
    private readonly queue: DeliveryQueue,
    private readonly clock: Clock,
    private readonly owner: string,
    private readonly logger: Logger,
    private readonly retryMs = 5_000,
  ) {}

  /**
   * True when the job is on the queue; false leaves the claim to expire and be retried.
   * `requestId`: the API request being served, carried by the job (none for the scheduler).
   */
  async publish(email: StoredEmail, requestId = ""): Promise<boolean> {
    try {
      await this.queue.publish(jobOf(email, this.clock.now(), requestId));
    } catch (err) {
      this.logger.warn({ err, emailId: email.id, requestId: requestId || undefined }, "publishing a delivery job failed; will retry");
      await this.emails
        .deferClaim(email.id, this.owner, new Date(this.clock.now().getTime() + this.retryMs))
        .catch(() => undefined);
      return false;
    }
    // Not awaited: the job is on the queue, which is what the caller waits for. Should the
    // mark be lost (a crash in the next milliseconds), the claim's lease runs out and the
    // scheduler publishes again, which the queue deduplicates by delivery id.
    this.marks.run(this.owner, email.id).catch((err) => {
      this.logger.warn({ err, emailId: email.id }, "marking an email published failed");
    });
    return true;
  }
}
