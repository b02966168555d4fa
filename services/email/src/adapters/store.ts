import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import type { CompiledContent, EmailListQuery, EmailRecord, EmailStatus, StoredEmail } from "../domain/model.js";
import type { EmailStore, IdempotencyEntry, IdempotencyStore } from "../domain/ports.js";
import { CollectionOutcomeStore, CollectionStatsStore, outcomesOf, type OutcomesDoc } from "./outcomes.js";
import { mailboxAddress } from "../domain/validate.js";

/*
 * The email domain's stores over kit's document store (embedded engine or MongoDB). The
 * Mongo-style queries and the indexes that serve them live side by side here; the domain
 * sees only the EmailStore and IdempotencyStore ports.
 */

/** Idempotency keys live at least this long (design §6: ≥ 24 h). */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

/**
 * `dispatch` is stored only while an email is in the outbox (pending or claimed) and is
 * indexed sparse: finished emails leave the index, so index upkeep never grows with the
 * number of emails ever sent. `dispatched` keeps how it left ("published" or "none").
 */
type EmailDoc = Omit<StoredEmail, "id" | "compiled" | "attachmentBytes" | "dispatch" | "variables" | "outcomes"> & {
  /** Outcomes and the recent event ids they applied (written by CollectionOutcomeStore). */
  out?: OutcomesDoc;
  applied?: string[];
  _id: string;
  /** Caller-chosen keys ($…, dotted) are not valid field names in a document: kept as JSON text. */
  variablesJson: string;
  dispatch?: "pending" | "claimed";
  dispatched?: "published" | "none";
};
/** `keepUntil`: set when the email is final and its content is kept a while (the TTL index drops it then). */
type ContentDoc = { _id: string; workspaceId: string; compiled: string; keepUntil?: Date };
/** One attachment's bytes (`_id` `<email id>.<index>`), kept and dropped with the email's content. */
type AttachmentDoc = { _id: string; workspaceId: string; emailId: string; content: string; keepUntil?: Date };
type KeyDoc = Omit<IdempotencyEntry, "record"> & { _id: string; record?: EmailRecord };

const TERMINAL: EmailStatus[] = ["DELIVERED", "FAILED", "CANCELLED"];

function toEmail(doc: EmailDoc): StoredEmail {
  const { _id, dispatch, dispatched, variablesJson, out, applied: _applied, ...rest } = doc;
  const outcomes = outcomesOf(out);
  return {
    id: _id,
    ...rest,
    ...(outcomes ? { outcomes } : {}),
    variables: variablesJson ? JSON.parse(variablesJson) : {},
    dispatch: dispatch ?? dispatched ?? "published",
  } as StoredEmail;
}

function toDoc(email: StoredEmail): EmailDoc {
  const { id, compiled: _compiled, attachmentBytes: _bytes, dispatch, variables, outcomes: _outcomes, ...rest } = email;
  const base = { _id: id, ...rest, variablesJson: JSON.stringify(variables ?? {}) };
  return dispatch === "pending" || dispatch === "claimed" ? { ...base, dispatch } : { ...base, dispatched: dispatch };
}

/** Base64 read straight from the compiled bytes (Buffer.from(bytes) alone would copy them first). */
const contentDocOf = (email: StoredEmail, compiled: CompiledContent): ContentDoc => ({
  _id: email.id,
  workspaceId: email.workspaceId,
  compiled: Buffer.from(compiled.buffer, compiled.byteOffset, compiled.byteLength).toString("base64"),
});

/**
 * Emails in two collections: `emails` (the record and its outbox state, small) and
 * `email_contents` (the compiled message, dropped once the email reached a final
 * status so memory stays bounded on the embedded store).
 */
export class CollectionEmailStore implements EmailStore {
  private readonly emails: Collection<EmailDoc>;
  private readonly contents: Collection<ContentDoc>;
  private readonly attachments: Collection<AttachmentDoc>;

  /** How long content outlives the email's final status; 0 drops it at once (memory stays bounded). */
  private readonly contentRetentionMs: number;

  constructor(store: Store, opts: { contentRetentionHours?: number } = {}) {
    this.emails = store.collection<EmailDoc>("emails");
    this.contents = store.collection<ContentDoc>("email_contents");
    this.attachments = store.collection<AttachmentDoc>("email_attachments");
    this.contentRetentionMs = (opts.contentRetentionHours ?? 0) * 3600_000;
  }

  async init(): Promise<void> {
    // Claim queries select by dispatch state; only outbox emails are in this index.
    // (Lookups are by _id, so no index on low-cardinality fields such as workspaceId,
    // whose upkeep on the embedded store costs O(emails) per update.)
    await this.emails.createIndex({ keys: { dispatch: 1 }, sparse: true });
    // The console's list: one workspace, newest first. The compound key is selective (unlike
    // workspaceId alone) and never changes after insert, so updates do not touch it.
    await this.emails.createIndex({ keys: { workspaceId: 1, createdAt: -1 } });
    // The expiry date is in the document, so the index stays the same whatever the retention.
    await this.contents.createIndex({ keys: { keepUntil: 1 }, expireAfterSeconds: 0 });
    await this.attachments.createIndex({ keys: { keepUntil: 1 }, expireAfterSeconds: 0 });
    // Erasure and the end of an email's content find its attachments by email.
    await this.attachments.createIndex({ keys: { emailId: 1 } });
  }

  /** The email is final: its content goes now, or is kept for the retention period. */
  private async finishContent(id: string, at: Date, hasAttachments: boolean): Promise<void> {
    if (this.contentRetentionMs > 0) {
      const keepUntil = new Date(at.getTime() + this.contentRetentionMs);
      await Promise.all([
        this.contents.updateOne({ _id: id }, { $set: { keepUntil } }),
        hasAttachments && this.attachments.updateMany({ emailId: id }, { $set: { keepUntil } }),
      ]);
    } else {
      await Promise.all([this.contents.deleteOne({ _id: id }), hasAttachments && this.attachments.deleteMany({ emailId: id })]);
    }
  }

  /** The attachments' bytes, before the record (as the content): an email anyone can see has them. */
  private async insertAttachments(email: StoredEmail): Promise<void> {
    const bytes = email.attachmentBytes ?? [];
    if (!bytes.length) return;
    await Promise.all(
      bytes.map((b, i) =>
        this.attachments.insertOne({
          _id: `${email.id}.${i}`,
          workspaceId: email.workspaceId,
          emailId: email.id,
          content: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64"),
        }),
      ),
    );
  }

  async insert(email: StoredEmail, opts: { freshId?: boolean } = {}): Promise<boolean> {
    const { id, compiled } = email;
    if (opts.freshId && compiled) return this.insertTogether(email, compiled);
    try {
      // Content first: an email the scheduler can see always has its content.
      if (compiled) await this.contents.insertOne(contentDocOf(email, compiled));
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
    try {
      await this.insertAttachments(email);
    } catch (err) {
      // Another email of this id wrote these (or the write failed): take back this content.
      if (compiled) await this.contents.deleteOne({ _id: id }).catch(() => undefined);
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
    try {
      await this.emails.insertOne(toDoc(email));
      return true;
    } catch (err) {
      // The other email of this id is final (its content is gone): drop the orphan.
      if (compiled) await this.contents.deleteOne({ _id: id }).catch(() => undefined);
      if (email.attachmentBytes?.length) await this.attachments.deleteMany({ emailId: id }).catch(() => undefined);
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Content and record at once; whichever part was written is taken back when the other failed. */
  private async insertTogether(email: StoredEmail, compiled: CompiledContent): Promise<boolean> {
    const [content, record, files] = await Promise.allSettled([
      this.contents.insertOne(contentDocOf(email, compiled)),
      this.emails.insertOne(toDoc(email)),
      this.insertAttachments(email),
    ]);
    if (content.status === "fulfilled" && record.status === "fulfilled" && files.status === "fulfilled") return true;
    if (email.attachmentBytes?.length) await this.attachments.deleteMany({ emailId: email.id }).catch(() => undefined);
    if (content.status === "fulfilled") await this.contents.deleteOne({ _id: email.id }).catch(() => undefined);
    if (record.status === "fulfilled") await this.emails.deleteOne({ _id: email.id }).catch(() => undefined);
    const failure = [content, record, files].find((r): r is PromiseRejectedResult => r.status === "rejected")!.reason;
    if (failure instanceof DuplicateKeyError) return false;
    throw failure;
  }

  async find(workspaceId: string, id: string): Promise<StoredEmail | null> {
    const doc = await this.emails.findOne({ _id: id, workspaceId });
    return doc ? toEmail(doc) : null;
  }

  async list(workspaceId: string, query: EmailListQuery): Promise<StoredEmail[]> {
    const filter: Record<string, unknown> = { workspaceId };
    const created: Record<string, Date> = {};
    if (query.createdFrom) created.$gte = query.createdFrom;
    if (query.createdTo) created.$lt = query.createdTo;
    if (query.after) {
      // (createdAt, _id) strictly before the cursor: older, or as old with a smaller id.
      created.$lte = query.after.createdAt;
      filter.$or = [{ createdAt: { $lt: query.after.createdAt } }, { _id: { $lt: query.after.id } }];
    }
    if (Object.keys(created).length) filter.createdAt = created;
    if (query.statuses) filter.status = { $in: query.statuses };
    // Every tag must match: each an element of the email's `name:value` list.
    if (query.tags?.length) filter.$and = query.tags.map((tag) => ({ tagKeys: tag }));
    if (query.groupBy !== undefined) filter.groupBy = query.groupBy === "" ? { $exists: false } : query.groupBy;
    if (query.recipient) {
      const pattern = escapeRegex(query.recipient);
      filter.recipient = { $regex: query.recipientExact ? `^${pattern}$` : pattern, $options: "i" };
    }
    const docs = await this.emails.find(filter, { sort: { createdAt: -1, _id: -1 }, limit: query.limit });
    return docs.map(toEmail);
  }

  async erase(workspaceId: string, ids: string[]): Promise<number> {
    if (!ids.length) return 0;
    // Content first, record last: an erasure cut short leaves the record, which a retry finds again.
    await this.contents.deleteMany({ _id: { $in: ids }, workspaceId });
    await this.attachments.deleteMany({ emailId: { $in: ids }, workspaceId });
    const { deletedCount } = await this.emails.deleteMany({ _id: { $in: ids }, workspaceId });
    return deletedCount;
  }

  async scrubOtherRecipient(workspaceId: string, address: string, opts: { limit: number }): Promise<{ id: string; status: EmailStatus }[]> {
    const exact = { $regex: `^${escapeRegex(address)}$`, $options: "i" };
    const docs = await this.emails.find(
      { workspaceId, $or: [{ ccAddresses: exact }, { bccAddresses: exact }, { "suppressed.email": exact }] },
      { limit: opts.limit },
    );
    const lower = address.toLowerCase();
    const other = (entry: string) => (mailboxAddress(entry.trim()) ?? entry.trim()).toLowerCase() !== lower;
    for (const doc of docs) {
      const set: Record<string, unknown> = {};
      for (const field of ["cc", "bcc", "ccAddresses", "bccAddresses"] as const) {
        const list = doc[field];
        if (Array.isArray(list)) set[field] = list.filter(other);
      }
      if (Array.isArray(doc.suppressed)) set.suppressed = doc.suppressed.filter((s) => s.email.toLowerCase() !== lower);
      await this.emails.updateOne({ _id: doc._id, workspaceId }, { $set: set });
    }
    return docs.map((d) => ({ id: d._id, status: d.status }));
  }

  async compiledContent(workspaceId: string, id: string): Promise<CompiledContent | null> {
    const doc = await this.contents.findOne(workspaceId ? { _id: id, workspaceId } : { _id: id });
    return doc ? new Uint8Array(Buffer.from(doc.compiled, "base64")) : null;
  }

  async attachmentContent(workspaceId: string, id: string, index: number): Promise<Uint8Array | null> {
    const doc = await this.attachments.findOne({ _id: `${id}.${index}`, workspaceId });
    return doc ? new Uint8Array(Buffer.from(doc.content, "base64")) : null;
  }

  async cancelScheduled(workspaceId: string, id: string, at: Date): Promise<StoredEmail | null> {
    const doc = await this.emails.findOneAndUpdate(
      { _id: id, workspaceId, status: "SCHEDULED", dispatch: "pending" },
      { $set: { status: "CANCELLED", dispatched: "none", updatedAt: at }, $unset: { dispatch: "" } },
      { returnDocument: "after" },
    );
    if (!doc) return null;
    await this.finishContent(id, at, Boolean(doc.attachments?.length || doc.forward));
    return toEmail(doc);
  }

  async claimDue(now: Date, owner: string, leaseUntil: Date): Promise<StoredEmail | null> {
    // Scheduled emails whose time came: they become SENT as they are claimed, so a
    // cancel racing the claim either wins (CANCELLED) or finds SENT and gets a 409.
    const due = await this.emails.findOneAndUpdate(
      { dispatch: "pending", dueAt: { $lte: now } },
      { $set: { dispatch: "claimed", status: "SENT", leaseOwner: owner, leaseUntil, updatedAt: now } },
      { sort: { dueAt: 1 }, returnDocument: "after" },
    );
    if (due) return toEmail(due);
    // Claims whose process died (or whose publish failed) before queueing the job.
    const stale = await this.emails.findOneAndUpdate(
      { dispatch: "claimed", leaseUntil: { $lt: now } },
      { $set: { leaseOwner: owner, leaseUntil } },
      { sort: { leaseUntil: 1 }, returnDocument: "after" },
    );
    return stale ? toEmail(stale) : null;
  }

  async markPublished(ids: string[], owner: string, at: Date): Promise<number> {
    const res = await this.emails.updateMany(
      { _id: { $in: ids }, dispatch: "claimed", leaseOwner: owner },
      { $set: { dispatched: "published", publishedAt: at }, $unset: { dispatch: "", leaseOwner: "", leaseUntil: "" } },
    );
    return res.matchedCount;
  }

  async deferClaim(id: string, owner: string, retryAt: Date): Promise<void> {
    await this.emails.updateOne({ _id: id, dispatch: "claimed", leaseOwner: owner }, { $set: { leaseUntil: retryAt } });
  }

  async transition(id: string, from: EmailStatus[], to: EmailStatus, at: Date, reason?: string): Promise<boolean> {
    const set: Record<string, unknown> = { status: to, updatedAt: at };
    if (reason !== undefined) set.statusReason = reason;
    if (!TERMINAL.includes(to)) return (await this.emails.updateOne({ _id: id, status: { $in: from } }, { $set: set })).matchedCount === 1;
    // Final: the content goes (or is kept a while), and the attachments of an email that has any.
    const doc = await this.emails.findOneAndUpdate({ _id: id, status: { $in: from } }, { $set: set }, { returnDocument: "after" });
    if (doc) await this.finishContent(id, at, Boolean(doc.attachments?.length || doc.forward));
    return doc !== null;
  }
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const keyId = (workspaceId: string, key: string) => `${workspaceId}:${key}`;

function toEntry(doc: KeyDoc): IdempotencyEntry {
  const { _id, ...rest } = doc;
  return rest as IdempotencyEntry;
}

/** Idempotency keys, one document per (workspace, key), expiring after a day. */
export class CollectionIdempotencyStore implements IdempotencyStore {
  private readonly keys: Collection<KeyDoc>;

  constructor(store: Store) {
    this.keys = store.collection<KeyDoc>("idempotency_keys");
  }

  async init(): Promise<void> {
    await this.keys.createIndex({ keys: { createdAt: 1 }, expireAfterSeconds: IDEMPOTENCY_TTL_SECONDS });
  }

  async tryInsert(entry: IdempotencyEntry): Promise<boolean> {
    try {
      await this.keys.insertOne({ _id: keyId(entry.workspaceId, entry.key), ...entry });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async get(workspaceId: string, key: string): Promise<IdempotencyEntry | null> {
    const doc = await this.keys.findOne({ _id: keyId(workspaceId, key) });
    return doc ? toEntry(doc) : null;
  }

  async takeOver(workspaceId: string, key: string, now: Date, leaseUntil: Date): Promise<IdempotencyEntry | null> {
    const doc = await this.keys.findOneAndUpdate(
      { _id: keyId(workspaceId, key), state: "in_flight", leaseUntil: { $lt: now } },
      { $set: { leaseUntil } },
      { returnDocument: "after" },
    );
    return doc ? toEntry(doc) : null;
  }

  async complete(workspaceId: string, key: string, emailId: string, record: EmailRecord): Promise<void> {
    await this.keys.updateOne({ _id: keyId(workspaceId, key), emailId }, { $set: { state: "done", record } });
  }

  async release(workspaceId: string, key: string, emailId: string): Promise<void> {
    await this.keys.deleteOne({ _id: keyId(workspaceId, key), emailId, state: "in_flight" });
  }

  async forgetEmails(workspaceId: string, emailIds: string[]): Promise<void> {
    // Keys live a day (TTL index), so this scan is bounded by a day of the service's sends.
    if (emailIds.length) await this.keys.deleteMany({ workspaceId, emailId: { $in: emailIds } });
  }
}

/** Every store of the service, with their indexes in place. */
export async function openStores(store: Store, opts: { contentRetentionHours?: number } = {}) {
  const emails = new CollectionEmailStore(store, opts);
  const idempotency = new CollectionIdempotencyStore(store);
  const outcomes = new CollectionOutcomeStore(store);
  const stats = new CollectionStatsStore(store);
  await Promise.all([emails.init(), idempotency.init(), stats.init()]);
  return { emails, idempotency, outcomes, stats };
}
