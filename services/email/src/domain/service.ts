import { appError, badRequest, notFound, type AppError } from "@mailroom/kit/errors.js";
import { contentRefOf } from "./dispatch.js";
import {
  DEFAULT_LIST_LIMIT, MAX_BATCH, MAX_LIST_LIMIT, TAG_FILTER, recordOf,
  type AttachmentInfo, type CompiledContent, type EmailListQuery, type EmailRecord, type EmailRequest,
} from "./model.js";
import { EmailSender, type AcceptOptions, type SendDeps } from "./send.js";
import type { StatsStore } from "./ports.js";
import { emailStats, type EmailStats, type StatsQuery } from "./stats.js";

/** The send path's ports plus the daily stats the outcome consumer maintains. */
export type EmailsDeps = SendDeps & { stats: StatsStore };

export interface BatchResult {
  successful: EmailRecord[];
  failed: Array<{ index: number; to: string; error: AppError }>;
}

/**
 * The email service's use cases (the facade transports call). It depends only on the
 * ports (SendDeps), so tests build it with in-memory adapters.
 */
export class Emails {
  private readonly sender: EmailSender;

  constructor(private readonly deps: EmailsDeps) {
    this.sender = new EmailSender(deps);
  }

  async send(workspaceId: string, request: EmailRequest, opts: Pick<AcceptOptions, "requestId" | "traceparent" | "sentBy"> = {}): Promise<EmailRecord> {
    const [outcome] = await this.sender.accept(workspaceId, [request], opts);
    if (!outcome.ok) throw outcome.error;
    return outcome.record;
  }

  /** Valid items are sent; each invalid one fails alone with the error it would get alone. */
  async sendBatch(workspaceId: string, requests: EmailRequest[], opts: AcceptOptions = {}): Promise<BatchResult> {
    assertBatchSize(requests.length);
    const outcomes = await this.sender.accept(workspaceId, requests, opts);
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

  /**
   * A page of the workspace's emails, newest first. The cursor is opaque to callers: the
   * position (createdAt, id) of the page's last email, so pages never repeat or skip an
   * email as new ones arrive.
   */
  async list(
    workspaceId: string,
    query: Omit<EmailListQuery, "limit" | "after"> & { limit?: number; cursor?: string; tags?: string[] },
  ): Promise<{ emails: EmailRecord[]; nextCursor?: string }> {
    const limit = query.limit || DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) throw badRequest("invalid_request", `limit must be between 1 and ${MAX_LIST_LIMIT}`);
    if (query.recipient !== undefined && query.recipient.length > 320) throw badRequest("invalid_request", "recipient is at most 320 characters");
    if (query.createdFrom && query.createdTo && query.createdFrom > query.createdTo) throw badRequest("invalid_request", "created_from is after created_to");
    for (const tag of query.tags ?? []) {
      if (!TAG_FILTER.test(tag)) throw badRequest("invalid_request", `tag ${JSON.stringify(tag.slice(0, 80))} must be name:value (letters, digits, "_" and "-", at most 256 each)`);
    }
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    const found = await this.deps.emails.list(workspaceId, {
      recipient: query.recipient?.trim() || undefined,
      recipientExact: query.recipientExact,
      statuses: query.statuses?.length ? query.statuses : undefined,
      groupBy: query.groupBy,
      createdFrom: query.createdFrom,
      createdTo: query.createdTo,
      tags: query.tags?.length ? query.tags : undefined,
      limit: limit + 1,
      after,
    });
    const page = found.slice(0, limit);
    const last = page.at(-1);
    return { emails: page.map(recordOf), nextCursor: found.length > limit && last ? encodeCursor(last.createdAt, last.id) : undefined };
  }

  /**
   * Erasure of one recipient address (DELETE /v1/contacts/:id?erase=true): every email of
   * the workspace to that address (matched whole, case-insensitively) loses its compiled
   * content in the content store, its idempotency entries, and its record with its stored
   * content, a page at a time. Safe to repeat: a retry finds what an interrupted run left.
   * A scheduled email erased this way is never sent (its record, which the scheduler
   * claims, is gone); one already handed to delivery may still go out. Then the address is
   * taken off other recipients' emails where it was a cc or bcc (scrubOtherRecipient).
   */
  async eraseRecipient(workspaceId: string, email: string): Promise<number> {
    const address = typeof email === "string" ? email.trim() : "";
    if (!address || address.length > 320 || !address.includes("@")) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not an address`);
    let erased = 0;
    for (;;) {
      const page = await this.deps.emails.list(workspaceId, { recipient: address, recipientExact: true, limit: ERASE_PAGE });
      if (!page.length) break;
      const ids = page.map((e) => e.id);
      for (let i = 0; i < ids.length; i += ERASE_PARALLEL) {
        await Promise.all(ids.slice(i, i + ERASE_PARALLEL).map((id) => this.deps.content.delete(workspaceId, contentRefOf(id))));
      }
      await this.deps.idempotency.forgetEmails(workspaceId, ids);
      const removed = await this.deps.emails.erase(workspaceId, ids);
      erased += removed;
      // Nothing removed: a concurrent erasure took these, and finishes the rest itself.
      if (removed === 0) break;
    }
    await this.scrubOtherRecipient(workspaceId, address);
    return erased;
  }

  /**
   * The address where it was a cc or bcc of someone else's email: taken off those records'
   * lists (the email stays, it is its `to`'s); a final email's content in the content store,
   * whose Cc header names it, goes too (one still on its way keeps it until it is final plus
   * the retention time, when its owner drops it).
   */
  private async scrubOtherRecipient(workspaceId: string, address: string): Promise<void> {
    for (;;) {
      const page = await this.deps.emails.scrubOtherRecipient(workspaceId, address, { limit: ERASE_PAGE });
      const final = page.filter((e) => e.status === "DELIVERED" || e.status === "FAILED" || e.status === "CANCELLED");
      await Promise.all(final.map((e) => this.deps.content.delete(workspaceId, contentRefOf(e.id))));
      if (page.length < ERASE_PAGE) return;
    }
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
        .releaseUsage(workspaceId, cancelled.usageCount ?? 1, cancelled.usagePeriod)
        .catch((err) => this.deps.logger.warn({ err, workspaceId, emailId: id }, "releasing usage of a cancelled email failed"));
    }
    return recordOf(cancelled);
  }

  /** Daily outcome counters of the workspace's transactional emails (UTC days). */
  stats(workspaceId: string, query: StatsQuery): Promise<EmailStats> {
    return emailStats(this.deps.stats, this.deps.clock, workspaceId, query);
  }

  /**
   * One attachment of an email with its bytes (the console's download). Its bytes are kept
   * as long as the email's compiled content: gone once the retention after a final status
   * ran out, or after erasure.
   */
  async attachment(workspaceId: string, id: string, index: number): Promise<{ info: AttachmentInfo; content: Uint8Array }> {
    const email = await this.deps.emails.find(workspaceId, id);
    if (!email) throw emailNotFound(id);
    const info = Number.isInteger(index) && index >= 0 ? email.attachments?.[index] : undefined;
    if (!info) throw notFound("attachment_not_found", `Email ${id} has no attachment ${index} (it has ${email.attachments?.length ?? 0})`);
    const content = await this.deps.emails.attachmentContent(workspaceId, id, index);
    if (!content) throw notFound("attachment_not_found", `The file ${info.filename} of email ${id} is no longer kept (attachments are kept as long as the email's content)`);
    return { info, content };
  }

  /** The compiled message delivery merges for this email. */
  async compiledContent(workspaceId: string, id: string): Promise<CompiledContent> {
    const compiled = await this.deps.emails.compiledContent(workspaceId, id);
    if (!compiled) throw emailNotFound(id);
    return compiled;
  }
}

/** Emails erased per round of an erasure; content store removals in flight at once. */
const ERASE_PAGE = 200;
const ERASE_PARALLEL = 20;

const encodeCursor = (createdAt: Date, id: string) => Buffer.from(`${new Date(createdAt).getTime()}.${id}`).toString("base64url");

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const m = /^(\d{1,15})\.([A-Za-z0-9_-]{1,64})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!m) throw badRequest("invalid_cursor", "cursor is not one this service returned");
  return { createdAt: new Date(Number(m[1])), id: m[2] };
}

const emailNotFound = (id: string) => notFound("email_not_found", `Email ${id} not found`);

/** A batch holds 1 to 50 emails; anything else refuses the whole request. */
export function assertBatchSize(count: number): void {
  if (count === 0) throw badRequest("batch_invalid", "emails must contain at least one email");
  if (count > MAX_BATCH) throw badRequest("batch_invalid", `A batch holds at most ${MAX_BATCH} emails; got ${count}`);
}
