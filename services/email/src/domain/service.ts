import { appError, badRequest, notFound, type AppError } from "../../../kit/src/errors.js";
import { MAX_BATCH, recordOf, type CompiledContent, type EmailRecord, type EmailRequest } from "./model.js";
import { EmailSender, type SendDeps } from "./send.js";
import type { StatsStore } from "./ports.js";
import { emailStats, type EmailStats, type StatsQuery } from "./stats.js";

/** The send path's ports plus the daily stats the outcome consumer maintains. */
export type EmailServiceDeps = SendDeps & { stats: StatsStore };

export interface BatchResult {
  successful: EmailRecord[];
  failed: Array<{ index: number; to: string; error: AppError }>;
}

/**
 * The email service's use cases (the facade transports call). It depends only on the
 * ports (SendDeps), so tests build it with in-memory adapters.
 */
export class EmailService {
  private readonly sender: EmailSender;

  constructor(private readonly deps: EmailServiceDeps) {
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
    if (!email) throw emailNotFound(id);
    return recordOf(email);
  }

  /** SCHEDULED -> CANCELLED, atomically against the scheduler's claim; else 409. */
  async cancel(workspaceId: string, id: string): Promise<EmailRecord> {
    const cancelled = await this.deps.emails.cancelScheduled(workspaceId, id, this.deps.clock.now());
    if (!cancelled) {
      const email = await this.deps.emails.find(workspaceId, id);
      if (!email) throw emailNotFound(id);
      throw appError({
        code: "email_not_cancellable",
        httpStatus: 409,
        message: `Only SCHEDULED emails can be cancelled; this one is ${email.status}`,
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

  /** Daily outcome counters of the workspace's transactional emails (UTC days). */
  stats(workspaceId: string, query: StatsQuery): Promise<EmailStats> {
    return emailStats(this.deps.stats, this.deps.clock, workspaceId, query);
  }

  /** The compiled message delivery merges for this email. */
  async compiledContent(workspaceId: string, id: string): Promise<CompiledContent> {
    const compiled = await this.deps.emails.compiledContent(workspaceId, id);
    if (!compiled) throw emailNotFound(id);
    return compiled;
  }
}

const emailNotFound = (id: string) => notFound("email_not_found", `Email ${id} not found`);

/** A batch holds 1 to 50 emails; anything else refuses the whole request. */
export function assertBatchSize(count: number): void {
  if (count === 0) throw badRequest("batch_invalid", "emails must contain at least one email");
  if (count > MAX_BATCH) throw badRequest("batch_invalid", `A batch holds at most ${MAX_BATCH} emails; got ${count}`);
}
