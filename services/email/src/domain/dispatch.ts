import { Coalescer } from "@mailroom/kit/coalesce.js";
import { variablesJson, type DeliveryJobSpec } from "@mailroom/pipeline/work.js";
import type { CompiledContent, ContentExtras, StoredEmail } from "./model.js";
import type { Clock, ContentWriter, DeliveryQueue, EmailStore, Logger } from "./ports.js";

/** Where an email's compiled content lives in the content store. */
export const contentRefOf = (emailId: string) => `email:${emailId}`;

/**
 * The delivery job of one transactional email: one recipient, so one delivery. `content`:
 * the stored content when the job carries it (small content, ContentWriter.place).
 */
export function jobOf(email: StoredEmail, now: Date, requestId = "", content?: Uint8Array): DeliveryJobSpec {
  return {
    ...(content ? { content } : {}),
    deliveryId: email.id,
    workspaceId: email.workspaceId,
    source: "transactional",
    messageId: email.messageId,
    emailId: email.id,
    recipient: { email: email.recipient, variablesJson: variablesJson(email.variables) },
    fromEmail: email.fromEmail,
    fromName: email.fromName,
    // Emails stored before Reply-To lists existed hold one string.
    replyTo: [email.replyTo ?? []].flat(),
    contentRef: contentRefOf(email.id),
    groupBy: email.groupBy ?? "",
    enqueuedAt: now,
    requestId,
    // The other envelope recipients (suppressed ones already left out) and the tags.
    cc: email.ccAddresses ?? [],
    bcc: email.bccAddresses ?? [],
    tags: email.tags ?? [],
  };
}

/** Thrown when a claimed email has no compiled content left to write (nothing can send it). */
class ContentMissing extends Error {}

/**
 * Publishes emails this process has claimed: the compiled content goes to the content store
 * first (delivery reads it only from there), then the job. The claim (a CAS in the store)
 * makes one process responsible; the queue's deduplication by delivery id and the delivery
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
    private readonly content: ContentWriter,
    private readonly clock: Clock,
    private readonly owner: string,
    private readonly logger: Logger,
    private readonly retryMs = 5_000,
  ) {}

  /**
   * Places the email's content: in its job when small (resolves to the bytes the job carries,
   * nothing written), else in the content store, as `publish` needs it to be before the job.
   * The send path starts this alongside the email's own insert (it holds the compiled bytes);
   * the scheduler lets `publish` read them back from the store.
   */
  writeContent(email: Pick<StoredEmail, "id" | "workspaceId">, compiled: CompiledContent, extras?: ContentExtras): Promise<Uint8Array | undefined> {
    if (!extras) return this.content.place(email.workspaceId, contentRefOf(email.id), compiled);
    // StoredContent's fields exactly (no record-only size).
    const carried: ContentExtras = {
      cc: extras.cc,
      headers: extras.headers.map(({ name, value }) => ({ name, value })),
      attachments: extras.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, contentId: a.contentId ?? "", size: a.size, content: a.content })),
      ...(extras.forwarded ? { forwarded: extras.forwarded } : {}),
    };
    return this.content.place(email.workspaceId, contentRefOf(email.id), compiled, carried);
  }

  /**
   * True when the job is on the queue; false leaves the claim to expire and be retried.
   * `requestId`: the API request being served, carried by the job (none for the scheduler).
   * `contentWritten`: the placing of this email's content already under way (writeContent);
   * without it the content is read from the email store and placed here, before the job.
   */
  async publish(email: StoredEmail, requestId = "", contentWritten?: Promise<Uint8Array | undefined>): Promise<boolean> {
    try {
      const carried = await (contentWritten ?? this.writeStoredContent(email));
      await this.queue.publishJob(jobOf(email, this.clock.now(), requestId, carried));
    } catch (err) {
      const missing = err instanceof ContentMissing;
      this.logger[missing ? "error" : "warn"](
        { err, emailId: email.id, requestId: requestId || undefined },
        missing ? "a claimed email has no compiled content; will retry" : "publishing a delivery job failed; will retry",
      );
      await this.emails
        .deferClaim(email.id, this.owner, new Date(this.clock.now().getTime() + (missing ? 60 * this.retryMs : this.retryMs)))
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

  /**
   * A scheduled email released now, or a claim taken over from a process that died: its
   * content was written to the email store at acceptance (a scheduled email can wait 90
   * days, longer than the content store keeps entries), so it goes to the content store now.
   */
  private async writeStoredContent(email: StoredEmail): Promise<Uint8Array | undefined> {
    const compiled = email.compiled ?? (await this.emails.compiledContent(email.workspaceId, email.id));
    if (!compiled) throw new ContentMissing(`email ${email.id} has no compiled content`);
    let extras: ContentExtras | undefined;
    if (email.forward) {
      const raw = email.attachmentBytes?.[0] ?? (await this.emails.attachmentContent(email.workspaceId, email.id, 0));
      if (!raw) throw new ContentMissing(`forwarded email ${email.id} lost its message`);
      extras = { cc: [], headers: [], attachments: [], forwarded: { raw, envelopeFrom: email.forward.envelopeFrom } };
    } else if (email.cc?.length || email.headers?.length || email.attachments?.length) {
      const bytes = email.attachmentBytes ?? (await Promise.all((email.attachments ?? []).map((_, i) => this.emails.attachmentContent(email.workspaceId, email.id, i))));
      if (bytes.some((b) => !b)) throw new ContentMissing(`email ${email.id} lost an attachment`);
      extras = {
        cc: email.cc ?? [],
        headers: email.headers ?? [],
        attachments: (email.attachments ?? []).map((info, i) => ({ ...info, content: bytes[i]! })),
      };
    }
    return this.writeContent(email, compiled, extras);
  }
}
