import type { DeliveryJobSpec } from "@mailroom/pipeline/work.js";
import type { CompiledContent, ContentExtras, EmailListQuery, EmailRecord, EmailStatus, OutcomeEventType, StoredEmail } from "./model.js";

/**
 * Everything the email domain needs from the outside world. The domain depends only on
 * these interfaces; their implementations (the I/O) live in ../adapters/, and unit tests
 * build the domain with in-memory ones (../testing.ts).
 *
 * Failures: a refusal the caller can act on is an AppError with a 4xx status (it fails
 * only the email it concerns); anything else fails the whole request.
 */

/** Emails and their outbox state. */
export interface EmailStore {
  /**
   * False when an email with that id already exists. The compiled content is written first,
   * so an email anyone can see has its content; `freshId` (an id no one else can hold, and
   * an email no scheduler will claim before its lease runs out) lets both be written at
   * once, which the embedded store commits as one transaction.
   */
  insert(email: StoredEmail, opts?: { freshId?: boolean }): Promise<boolean>;
  /** The email without its compiled content. */
  find(workspaceId: string, id: string): Promise<StoredEmail | null>;
  /** Up to `query.limit` of the workspace's emails matching the query, newest first (ties: larger id first). */
  list(workspaceId: string, query: EmailListQuery): Promise<StoredEmail[]>;
  /**
   * Erasure: deletes these emails of the workspace, record and stored content together
   * (ids of another workspace are left alone); answers how many records went.
   */
  erase(workspaceId: string, ids: string[]): Promise<number>;
  /**
   * Erasure of an address that was a cc or bcc of other recipients' emails: up to `limit` of
   * the workspace's emails naming it (cc, bcc, the envelope or the suppressed list, whole and
   * case-insensitively) lose it from every list; answers them (their ids and statuses).
   */
  scrubOtherRecipient(workspaceId: string, address: string, opts: { limit: number }): Promise<{ id: string; status: EmailStatus }[]>;
  compiledContent(workspaceId: string, id: string): Promise<CompiledContent | null>;
  /** One attachment's bytes (index in the record's list); null when not kept (or no such email). */
  attachmentContent(workspaceId: string, id: string, index: number): Promise<Uint8Array | null>;
  /** CAS: SCHEDULED and not yet claimed -> CANCELLED. Null when it was not in that state. */
  cancelScheduled(workspaceId: string, id: string, at: Date): Promise<StoredEmail | null>;
  /**
   * CAS: claims one email whose time has come (pending and due, or claimed by a process
   * whose lease ran out) for `owner` until `leaseUntil`. A scheduled email becomes SENT.
   */
  claimDue(now: Date, owner: string, leaseUntil: Date): Promise<StoredEmail | null>;
  /** Marks claimed emails published; answers how many `owner` still held the claim of. */
  markPublished(ids: string[], owner: string, at: Date): Promise<number>;
  /** Keeps the claim but lets it expire at `retryAt` (publishing failed). */
  deferClaim(id: string, owner: string, retryAt: Date): Promise<void>;
  /** CAS on status: moves the email to `to` only when its status is one of `from`. */
  transition(id: string, from: EmailStatus[], to: EmailStatus, at: Date, reason?: string): Promise<boolean>;
}

export interface IdempotencyEntry {
  workspaceId: string;
  key: string;
  payloadHash: string;
  /** The id the first request allocated for its email. */
  emailId: string;
  state: "in_flight" | "done";
  /** The response of the first request, once done. */
  record?: EmailRecord;
  /** An in-flight entry whose lease passed belongs to a request that died. */
  leaseUntil: Date;
  createdAt: Date;
}

/** Idempotency keys per workspace, expiring after a day. */
export interface IdempotencyStore {
  /** Atomic insert; false when the key already exists for the workspace. */
  tryInsert(entry: IdempotencyEntry): Promise<boolean>;
  get(workspaceId: string, key: string): Promise<IdempotencyEntry | null>;
  /** CAS: takes over an in-flight entry whose lease ended before `now`. */
  takeOver(workspaceId: string, key: string, now: Date, leaseUntil: Date): Promise<IdempotencyEntry | null>;
  complete(workspaceId: string, key: string, emailId: string, record: EmailRecord): Promise<void>;
  /** Drops an in-flight entry of `emailId` (nothing was sent, the key is free again). */
  release(workspaceId: string, key: string, emailId: string): Promise<void>;
  /** Erasure: drops every entry (in flight or done) that allocated one of these emails. */
  forgetEmails(workspaceId: string, emailIds: string[]): Promise<void>;
}

export interface SenderCheck {
  allowed: boolean;
  address: string;
  name: string;
  allowedEmails: string[];
  allowedDomains: string[];
}

export interface TemplateContent {
  name: string;
  /** "layout" and "snippet" are pieces of templates, refused as what an email is sent from; absent: "template". */
  kind?: "template" | "layout" | "snippet";
  subject: string;
  html: string;
  text: string;
  previewText: string;
  /**
   * Identifies this version of the template with its layout and snippets (the Liquid parse
   * cache's key); absent for content that needs no Liquid engine.
   */
  liquidKey?: string;
  /** The layout's HTML and text (its `{{ content }}` receives the template). */
  layout?: { html: string; text: string };
  snippets?: Array<{ name: string; html: string }>;
  /** The workspace's zone: `date` renders in it unless the values carry a `timezone`. */
  timeZone?: string;
  /** The template's own sender ("" or absent: the workspace's default sender) and reply-to addresses. */
  fromEmail?: string;
  fromName?: string;
  replyTo?: string[];
}

export interface SendableReservation {
  /** Lowercased suppressed address -> reason; these are not counted. */
  suppressed: Map<string, string>;
  granted: boolean;
  /** Sends reserved (0 unless granted). */
  reserved: number;
  period: string;
  used?: number;
  limit?: number;
}

/**
 * Senders, templates and usage (the accounts unit); suppressions and contacts (the audience
 * unit). One port: the send path asks both, and their adapter batches and caches.
 */
export interface Directory {
  checkSender(workspaceId: string, from: string): Promise<SenderCheck>;
  /** Verified addresses and domains of the workspace. */
  verifiedSenders(workspaceId: string): Promise<{ emails: string[]; domains: string[] }>;
  /** Null when the workspace has no template of that name. */
  getTemplate(workspaceId: string, name: string): Promise<TemplateContent | null>;
  /**
   * One call per request: the suppressed addresses among `recipients` (one entry per email)
   * with their reason, and a usage reservation for the others, atomic: either all of them
   * fit this month's limit or none is counted.
   */
  reserveSendable(workspaceId: string, recipients: string[]): Promise<SendableReservation>;
  releaseUsage(workspaceId: string, count: number, period: string): Promise<void>;
  upsertContact(workspaceId: string, email: string, properties: Record<string, unknown>): Promise<void>;
}

export interface CompileInput {
  workspaceId: string;
  contentId: string;
  subject: string;
  html: string;
  text: string;
  previewText: string;
  trackClicks: boolean;
  trackOpens: boolean;
  /** Sent as given: `{{…}}` is literal text, not a merge variable (raw emails without Liquid markup). */
  literal: boolean;
  /**
   * An automation's email to a contact: compiled with the unsubscribe footer (unless the content
   * links {{unsubscribeUrl}} itself), and delivery adds List-Unsubscribe. Absent: transactional.
   */
  automation?: boolean;
  /**
   * A Liquid template to render for this one recipient first (DESIGN §10.2); the subject,
   * html, text and previewText above are then ignored. A render that fails or runs over its
   * limits refuses the email with 400 `template_render_failed`. `raw`: the content is the
   * request's own (a raw email), so bad Liquid is the caller's 400 `invalid_template`.
   */
  liquid?: { template: TemplateContent; variables: Record<string, unknown>; email: string; raw?: boolean };
}

export interface Renderer {
  /** The compiled message, which the delivery service merges per recipient later. */
  compile(input: CompileInput): Promise<CompiledContent>;
}

/**
 * The one publisher of delivery work (services/pipeline DeliveryJobPublisher): a job names
 * its content by `content_ref`, which must be in the content store before it is published.
 * Idempotent per delivery id (msgID deduplication).
 */
export interface DeliveryQueue {
  publishJob(job: DeliveryJobSpec): Promise<void>;
}

/**
 * The content store delivery reads compiled content from (services/pipeline ContentStore).
 * The email service writes an email's content under `email:<id>` before publishing its job.
 */
export interface ContentWriter {
  /**
   * Resolves once the server stored it (a rewrite of the same content is harmless). `extras`:
   * the Cc header, custom headers and attachments (StoredContent's other fields), when any.
   */
  put(workspaceId: string, contentRef: string, compiled: CompiledContent, extras?: ContentExtras): Promise<void>;
  /**
   * Puts the content where its job finds it: small content comes back, for the job to carry
   * (nothing is written); larger content is written as put() does and undefined comes back.
   */
  place(workspaceId: string, contentRef: string, compiled: CompiledContent, extras?: ContentExtras): Promise<Uint8Array | undefined>;
  /** Removes the content (erasure); removing content that is not there is harmless. */
  delete(workspaceId: string, contentRef: string): Promise<void>;
}

/** kit's one clock. */
export type { Clock } from "@mailroom/kit/clock.js";

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** A per-email milestone: reached once per email, counted once in the daily stats. */
export type Milestone =
  | "sent" | "delivered" | "bounced" | "hardBounced" | "failed" | "complained" | "opened" | "clicked" | "unsubscribed";

/** What one event changes on its email's outcomes. */
export interface OutcomeChange {
  /** The email's latest event; absent for a provider's confirmation, which is not a new outcome. */
  type?: OutcomeEventType;
  at: Date;
  open?: boolean;
  click?: { url: string };
  bounce?: { hard: boolean };
  /** The delivery route that carried or tried the message (DESIGN §9.7): becomes the email's route. */
  route?: string;
  /** A 4xx retried later: counted, and the latest one's time, route and reply kept. */
  deferral?: { detail?: string };
  /** A relay provider confirmed the recipient's server accepted it (MAIL_EVENT_TYPE_DELIVERED). */
  confirmed?: true;
  /** A reply was received to it (MAIL_EVENT_TYPE_REPLIED): counted, the latest one's time and id kept. */
  reply?: { receivedId: string };
}

/** Where an email's outcomes are counted in the daily stats. */
export interface StatsTarget {
  workspaceId: string;
  groupBy: string;
  /** When the email went (or was due to go) out: its stats day. */
  sentAt: Date;
}

/** Per-email outcomes, written once per event id. */
export interface OutcomeStore {
  /**
   * Applies `change` unless the email already applied `eventId` (a bounded set of recent
   * event ids per email, updated in the same atomic write). Null when no such email exists.
   */
  applyOnce(emailId: string, eventId: string, change: OutcomeChange): Promise<{ applied: boolean; target: StatsTarget } | null>;
  /**
   * CAS: `eventId` claims the email's milestone unless another event did; then, once, the
   * milestone is marked counted. True when this call is the one that marks it (the caller
   * counts it in the stats), so a redelivered event never counts twice.
   */
  claimAndCount(emailId: string, milestone: Milestone, eventId: string, at: Date, route?: string): Promise<boolean>;
  /**
   * CAS: an applied open or click leaves an owed stats count on its email (in the same
   * write); taking it back is what lets the caller count it. True once per event, also
   * when a redelivery follows a failure between the two writes.
   */
  takeOwedCount(emailId: string, eventId: string): Promise<boolean>;
}

export type StatsCounterName =
  | "sent" | "delivered" | "bounced" | "hardBounced" | "failed" | "complained" | "opened" | "clicked" | "unsubscribed" | "opens" | "clicks";
export type StatsCounters = Record<StatsCounterName, number>;

export interface DailyStatsRow {
  /** YYYY-MM-DD, UTC. */
  day: string;
  groupBy: string;
  counters: Partial<StatsCounters>;
}

/** Daily counters per (workspace, UTC day, groupBy). */
export interface StatsStore {
  increment(workspaceId: string, day: string, groupBy: string, by: Partial<StatsCounters>): Promise<void>;
  /** Rows of the days from..to (inclusive), of one group when `groupBy` is given. */
  rows(workspaceId: string, fromDay: string, toDay: string, groupBy?: string): Promise<DailyStatsRow[]>;
  /**
   * The same rows for the emails carrying every one of `tags` (`name:value`), counted from
   * those emails' own outcomes (one row per email: its day, its group, its milestones).
   */
  taggedRows(workspaceId: string, fromDay: string, toDay: string, tags: string[], groupBy?: string): Promise<DailyStatsRow[]>;
}

/**
 * Runs the release of one email the scheduler publishes (a scheduled email whose time came,
 * or an immediate one taken over from a publisher that died). The adapter (adapters/tracing.ts)
 * opens a span of a new trace there, linked to the request that created the email
 * (`email.traceparent`), so the job's publish, delivery and the SMTP attempt hang below it.
 */
export type ReleaseScope = <T>(email: StoredEmail, release: () => Promise<T>) => Promise<T>;
