/**
 * The transactional email domain: plain types that know nothing of HTTP, protobuf or NATS.
 * Refusals are kit's AppError (a code from the gateway's error table and its HTTP status).
 */

/**
 * The renderer's compiled message (the content contract shared with the renderer and
 * delivery through services/content), encoded. The domain stores and hands it on, never
 * reads it.
 */
export type CompiledContent = Uint8Array;

export type EmailStatus = "SCHEDULED" | "SENT" | "DELIVERED" | "FAILED" | "CANCELLED";
export type EmailType = "raw" | "templated";

export interface EmailSettings {
  trackClicks?: boolean;
  trackOpens?: boolean;
}

export interface RawContent {
  kind: "raw";
  from: string;
  fromName?: string;
  subject: string;
  html: string;
  text?: string;
  previewText?: string;
  contactProperties?: Record<string, unknown>;
  /** Sent as given, never rendered as Liquid (a message relayed by SMTP submission). */
  asGiven?: true;
}

/**
 * A received message forwarded by the inbound unit (DESIGN §10.4; internal, never from the
 * public API): sent as these bytes, verbatim, with `envelopeFrom` (its SRS address, or ""
 * for the null sender) as MAIL FROM. Recorded as a raw email whose from and subject are the
 * message's own headers; no sender check, rendering, tracking or DKIM signature of ours.
 */
export interface ForwardedContent {
  kind: "forwarded";
  raw: Uint8Array;
  envelopeFrom: string;
  /** The received email it forwards ("rcv_…"). */
  receivedId?: string;
}

export interface TemplatedContent {
  kind: "templated";
  template: string;
  variables: Record<string, unknown>;
}

/** A custom header of an email (DESIGN §9.5), in the order given. */
export interface EmailHeader {
  name: string;
  value: string;
}

/** A tag an email carries: records, events, webhooks, the list filter and stats. */
export interface EmailTag {
  name: string;
  value: string;
}

/** A file sent with an email; `contentId` makes it inline (`cid:` in the HTML). */
export interface AttachmentInput {
  filename: string;
  content: Uint8Array;
  /** Absent or empty: taken from the filename's extension. */
  contentType?: string;
  contentId?: string;
}

/** An attachment as records list it (its bytes: GetEmailAttachment). */
export interface AttachmentInfo {
  filename: string;
  contentType: string;
  size: number;
  contentId?: string;
}

/** An attachment with its bytes and resolved content type, as the content store holds it. */
export interface AttachmentContent extends AttachmentInfo {
  content: Uint8Array;
}

/**
 * What the content store holds for an email besides the compiled message: the Cc header as
 * given, the custom headers and the attachments (delivery builds the MIME from these).
 */
export interface ContentExtras {
  cc: string[];
  headers: EmailHeader[];
  attachments: AttachmentContent[];
  /** A forwarded message: delivery sends these bytes as they are, from `envelopeFrom`. */
  forwarded?: { raw: Uint8Array; envelopeFrom: string };
}

/** A cc or bcc address left out of the envelope because it is on the suppression list. */
export interface SuppressedRecipient {
  email: string;
  reason: string;
}

/** One email as accepted from a caller, already shape-checked. */
export interface EmailRequest {
  to: string;
  content: RawContent | TemplatedContent | ForwardedContent;
  settings?: EmailSettings;
  groupBy?: string;
  /** Absent: send now. */
  sendAt?: Date;
  idempotencyKey?: string;
  /** Reply-To addresses as given (`addr` or `Name <addr>`); on templated emails they replace the template's. */
  replyTo?: string[];
  /** Carbon-copy recipients as given (`addr` or `Name <addr>`). */
  cc?: string[];
  /** Blind-copy recipients as given; named in no delivered message. */
  bcc?: string[];
  headers?: EmailHeader[];
  attachments?: AttachmentInput[];
  tags?: EmailTag[];
  /**
   * An automation's send to a contact (internal: the public API never sets it). Lifecycle
   * mail, not transactional: it gets the unsubscribe footer and List-Unsubscribe headers.
   */
  automation?: boolean;
}

/** What callers see of an email. */
export interface EmailRecord {
  id: string;
  workspaceId: string;
  messageId: string;
  status: EmailStatus;
  /** Why it failed (suppressed, bounced, …). */
  statusReason?: string;
  to: string;
  type: EmailType;
  from?: string;
  subject?: string;
  template?: string;
  groupBy?: string;
  sendAt?: Date;
  createdAt: Date;
  updatedAt: Date;
  /** What happened after delivery took it (absent until the first event). */
  outcomes?: EmailOutcomes;
  /** When it was handed to delivery (absent while scheduled). */
  sentAt?: Date;
  /** DESIGN §9.5: as given (absent when none). */
  cc?: string[];
  bcc?: string[];
  headers?: EmailHeader[];
  attachments?: AttachmentInfo[];
  tags?: EmailTag[];
  /** Cc / bcc addresses on the suppression list, left out of the envelope (never sent to). */
  suppressed?: SuppressedRecipient[];
  /** Who sent it: "key:key_…" (an API key), "member:usr_…" (the console), "cli:user"; absent for the system's own sends. */
  sentBy?: string;
}

/** Clicks on one tracked link of an email. */
export interface LinkClicks {
  url: string;
  clicks: number;
  lastClickedAt: Date;
}

export type OutcomeEventType = "DELIVERED" | "DEFERRED" | "BOUNCED" | "FAILED" | "OPENED" | "CLICKED" | "COMPLAINED" | "UNSUBSCRIBED";

/** Per-email outcomes; every event counted once however often it is redelivered. */
export interface EmailOutcomes {
  opens: number;
  clicks: number;
  firstOpenedAt?: Date;
  lastOpenedAt?: Date;
  firstClickedAt?: Date;
  lastClickedAt?: Date;
  deliveredAt?: Date;
  bouncedAt?: Date;
  bounceType?: "hard" | "soft";
  failedAt?: Date;
  complainedAt?: Date;
  unsubscribedAt?: Date;
  links: LinkClicks[];
  lastEvent?: { type: OutcomeEventType; at: Date };
  /**
   * DESIGN §9.7: the delivery route (a relay's name, "direct", "capture") that last carried or
   * tried the message, and the one of each outcome. Shown by the console; not in /v1 records.
   */
  route?: string;
  deliveredRoute?: string;
  bouncedRoute?: string;
  failedRoute?: string;
  /** 4xx replies retried later: how many, and the latest one. */
  deferrals?: number;
  lastDeferral?: { at: Date; route?: string; detail?: string };
  /** A relay provider's event webhook confirmed the recipient's own server accepted it. */
  confirmed?: { at: Date; route?: string };
  /** DESIGN §10.4: replies received to it (each counted once), and the latest one ("rcv_…"). */
  replies?: number;
  lastReply?: { at: Date; receivedId: string };
}

/**
 * Where an email is in the outbox: `pending` waits for its time, `claimed` is being
 * published by one process (until its lease ends), `published` went to the delivery
 * queue, `none` never will (cancelled or suppressed).
 */
export type DispatchState = "pending" | "claimed" | "published" | "none";

/** An email as the service keeps it: the record plus what delivery needs. */
export interface StoredEmail extends EmailRecord {
  /** Bare recipient address. */
  recipient: string;
  fromEmail: string;
  fromName: string;
  /** Bare Reply-To addresses (records stored before lists existed hold one string). */
  replyTo?: string[];
  /** Merge values handed to delivery (templated variables, or contact properties). */
  variables: Record<string, unknown>;
  compiled?: CompiledContent;
  /**
   * The attachments' bytes, in the record's order: written with the compiled content, never in
   * the record. A forwarded email keeps its message here (one entry, and no record attachments).
   */
  attachmentBytes?: Uint8Array[];
  /** A forwarded message (ForwardedContent): its bytes are attachmentBytes[0]. */
  forward?: { envelopeFrom: string; receivedId?: string };
  dispatch: DispatchState;
  dueAt: Date;
  leaseOwner?: string;
  leaseUntil?: Date;
  /** Usage period the send was counted against, released on cancel. */
  usagePeriod?: string;
  /** When the outbox handed it to the delivery queue. */
  publishedAt?: Date;
  /** Bare cc / bcc addresses of the envelope, suppressed ones left out. */
  ccAddresses?: string[];
  bccAddresses?: string[];
  /** The tags as `name:value`, what the list and stats filters match. */
  tagKeys?: string[];
  /** Recipients counted against the monthly limit (absent: 1, emails stored before cc/bcc). */
  usageCount?: number;
  /**
   * The W3C traceparent of the request that created it (absent while tracing is off): an
   * email the scheduler releases later goes out in a trace of its own that links to it.
   */
  traceparent?: string;
}

/** The public record of a stored email. */
export function recordOf(email: StoredEmail): EmailRecord {
  const record: EmailRecord = {
    id: email.id,
    workspaceId: email.workspaceId,
    messageId: email.messageId,
    status: email.status,
    to: email.to,
    type: email.type,
    createdAt: email.createdAt,
    updatedAt: email.updatedAt,
  };
  if (email.statusReason) record.statusReason = email.statusReason;
  if (email.type === "raw") {
    record.from = email.from;
    record.subject = email.subject;
  } else {
    record.template = email.template;
  }
  if (email.groupBy) record.groupBy = email.groupBy;
  if (email.sendAt) record.sendAt = email.sendAt;
  if (email.outcomes) record.outcomes = email.outcomes;
  if (email.publishedAt) record.sentAt = email.publishedAt;
  if (email.cc?.length) record.cc = email.cc;
  if (email.bcc?.length) record.bcc = email.bcc;
  if (email.headers?.length) record.headers = email.headers;
  if (email.attachments?.length) record.attachments = email.attachments;
  if (email.tags?.length) record.tags = email.tags;
  if (email.suppressed?.length) record.suppressed = email.suppressed;
  if (email.sentBy) record.sentBy = email.sentBy;
  return record;
}

export const MAX_BATCH = 50;
/** Recipients of one email: to, cc and bcc together. */
export const MAX_RECIPIENTS = 50;
/** Attachments of one email, decoded. */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_TAGS = 10;
export const MAX_REPLY_TO = 5;
/** HTML of one email: 5 MB of UTF-8. */
export const MAX_HTML_BYTES = 5 * 1024 * 1024;
export const SCHEDULE_HORIZON_MS = 90 * 24 * 3600 * 1000;

/** A page of the workspace's emails, newest first (ListEmails). */
export interface EmailListQuery {
  /** A case-insensitive part of the recipient's address (the whole address with `recipientExact`). */
  recipient?: string;
  recipientExact?: boolean;
  statuses?: EmailStatus[];
  /** "" = emails without a group. */
  groupBy?: string;
  createdFrom?: Date;
  createdTo?: Date;
  /** Only emails carrying every one of these tags (`name:value`). */
  tags?: string[];
  limit: number;
  /** Strictly older than this (createdAt, id) position: the last email of the previous page. */
  after?: { createdAt: Date; id: string };
}

export const MAX_LIST_LIMIT = 100;
/** A tag filter: `name:value`, each part letters, digits, `_` and `-`, at most 256 characters (DESIGN §9.5). */
export const TAG_FILTER = /^[A-Za-z0-9_-]{1,256}:[A-Za-z0-9_-]{1,256}$/;
export const DEFAULT_LIST_LIMIT = 25;
