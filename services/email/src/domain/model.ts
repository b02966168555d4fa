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
}

export interface TemplatedContent {
  kind: "templated";
  template: string;
  variables: Record<string, unknown>;
}

/** One email as accepted from a caller, already shape-checked. */
export interface EmailRequest {
  to: string;
  content: RawContent | TemplatedContent;
  settings?: EmailSettings;
  groupBy?: string;
  /** Absent: send now. */
  sendAt?: Date;
  idempotencyKey?: string;
  /** Reply-To addresses as given (`addr` or `Name <addr>`); on templated emails they replace the template's. */
  replyTo?: string[];
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
  dispatch: DispatchState;
  dueAt: Date;
  leaseOwner?: string;
  leaseUntil?: Date;
  /** Usage period the send was counted against, released on cancel. */
  usagePeriod?: string;
  /** When the outbox handed it to the delivery queue. */
  publishedAt?: Date;
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
  return record;
}

export const MAX_BATCH = 50;
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
  limit: number;
  /** Strictly older than this (createdAt, id) position: the last email of the previous page. */
  after?: { createdAt: Date; id: string };
}

export const MAX_LIST_LIMIT = 100;
/** A tag filter: `name:value`, each part letters, digits, `_` and `-`, at most 256 characters (DESIGN §9.5). */
export const TAG_FILTER = /^[A-Za-z0-9_-]{1,256}:[A-Za-z0-9_-]{1,256}$/;
export const DEFAULT_LIST_LIMIT = 25;
