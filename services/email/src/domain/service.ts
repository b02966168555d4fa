import { EmailError, MAX_BATCH, recordOf, type EmailRecord, type EmailRequest } from "./model.js";
import { EmailSender, type SendDeps } from "./send.js";

export interface BatchResult {
  successful: EmailRecord[];
  failed: Array<{ index: number; to: string; error: EmailError }>;
}

/**
 * The email service's use cases. It depends only on repositories (SendDeps), so tests
 * build it with in-memory ones.
 */
export class EmailService {
  private readonly sender: EmailSender;

  constructor(private readonly deps: SendDeps) {
    this.sender = new EmailSender(deps);
  }

  async send(workspaceId: string, request: EmailRequest): Promise<EmailRecord> {
    const [outcome] = await this.sender.accept(workspaceId, [request]);
    if (!outcome.ok) throw outcome.error;
    return outcome.record;
  }

  /** Valid items are sent; each invalid one fails alone with the error it would get alone. */
  async sendBatch(workspaceId: string, requests: EmailRequest[]): Promise<BatchResult> {
    assertBatchSize(requests.length);
    const outcomes = await this.sender.accept(workspaceId, requests);
    const result: BatchResult = { successful: [], failed: [] };
    outcomes.forEach((outcome, index) => {
      if (outcome.ok) result.successful.push(outcome.record);
      else result.failed.push({ index, to: requests[index].to, error: outcome.error });
    });
    return result;
  }

  async get(workspaceId: string, id: string): Promise<EmailRecord> {
    const email = await this.deps.emails.find(workspaceId, id);
    if (!email) throw notFound(id);
    return recordOf(email);
  }

  /** SCHEDULED -> CANCELLED, atomically against the scheduler's claim; else 409. */
  async cancel(workspaceId: string, id: string): Promise<EmailRecord> {
    const cancelled = await this.deps.emails.cancelScheduled(workspaceId, id, this.deps.clock.now());
    if (!cancelled) {
      const email = await this.deps.emails.find(workspaceId, id);
      if (!email) throw notFound(id);
      throw new EmailError("email_not_cancellable", 409, `Only SCHEDULED emails can be cancelled; this one is ${email.status}`, {
        extra: { status: JSON.stringify(email.status) },
      });
    }
    if (cancelled.usagePeriod) {
      await this.deps.directory
        .releaseUsage(workspaceId, 1, cancelled.usagePeriod)
        .catch((err) => this.deps.logger.warn({ err, workspaceId, emailId: id }, "releasing usage of a cancelled email failed"));
    }
    return recordOf(cancelled);
  }

  /** The compiled message delivery merges for this email. */
  async compiledContent(workspaceId: string, id: string): Promise<Uint8Array> {
    const compiled = await this.deps.emails.compiledContent(workspaceId, id);
    if (!compiled) throw notFound(id);
    return compiled;
  }
}

const notFound = (id: string) => new EmailError("email_not_found", 404, `Email ${id} not found`);

/** A batch holds 1 to 50 emails; anything else refuses the whole request. */
export function assertBatchSize(count: number): void {
  if (count === 0) throw new EmailError("batch_invalid", 400, "emails must contain at least one email");
  if (count > MAX_BATCH) throw new EmailError("batch_invalid", 400, `A batch holds at most ${MAX_BATCH} emails; got ${count}`);
}
