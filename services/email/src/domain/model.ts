/**
 * The transactional email domain: plain types that know nothing of HTTP, protobuf or NATS.
 */

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
  replyTo?: string;
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
  /** Digest of the caller's payload; equal digests mean "the same request". */
  payloadHash?: string;
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
  replyTo?: string;
  /** Merge values handed to delivery (templated variables, or contact properties). */
  variables: Record<string, unknown>;
  /** The renderer's compiled message, opaque to the domain. */
  compiled?: Uint8Array;
  dispatch: DispatchState;
  dueAt: Date;
  leaseOwner?: string;
  leaseUntil?: Date;
  /** Usage period the send was counted against, released on cancel. */
  usagePeriod?: string;
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
  return record;
}

export interface EmailErrorDetails {
  allowedEmails?: string[];
  allowedDomains?: string[];
  extra?: Record<string, string>;
}

/** A refusal the caller can act on; `code` names a row of the gateway's error table. */
export class EmailError extends Error {
  constructor(
    readonly code: string,
    readonly httpStatus: number,
    message: string,
    readonly details: EmailErrorDetails = {},
  ) {
    super(message);
    this.name = "EmailError";
  }
}

export const MAX_BATCH = 50;
export const SCHEDULE_HORIZON_MS = 90 * 24 * 3600 * 1000;
