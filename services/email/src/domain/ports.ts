import type { EmailRecord, EmailStatus, StoredEmail } from "./model.js";

/**
 * Everything the email domain needs from the outside world. The service depends only on
 * these interfaces; I/O lives in their implementations (store.ts, repositories/), and
 * unit tests build the service with in-memory ones.
 */

export interface EmailRepository {
  /** False when an email with that id already exists. */
  insert(email: StoredEmail): Promise<boolean>;
  /** The email without its compiled content. */
  find(workspaceId: string, id: string): Promise<StoredEmail | null>;
  compiledContent(workspaceId: string, id: string): Promise<Uint8Array | null>;
  /** CAS: SCHEDULED and not yet claimed -> CANCELLED. Null when it was not in that state. */
  cancelScheduled(workspaceId: string, id: string, at: Date): Promise<StoredEmail | null>;
  /**
   * CAS: claims one email whose time has come (pending and due, or claimed by a process
   * whose lease ran out) for `owner` until `leaseUntil`. A scheduled email becomes SENT.
   */
  claimDue(now: Date, owner: string, leaseUntil: Date): Promise<StoredEmail | null>;
  /** Marks a claimed email published; false when `owner` no longer holds the claim. */
  markPublished(id: string, owner: string, at: Date): Promise<boolean>;
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

export interface IdempotencyRepository {
  /** Atomic insert; false when the key already exists for the workspace. */
  tryInsert(entry: IdempotencyEntry): Promise<boolean>;
  get(workspaceId: string, key: string): Promise<IdempotencyEntry | null>;
  /** CAS: takes over an in-flight entry whose lease ended before `now`. */
  takeOver(workspaceId: string, key: string, now: Date, leaseUntil: Date): Promise<IdempotencyEntry | null>;
  complete(workspaceId: string, key: string, emailId: string, record: EmailRecord): Promise<void>;
  /** Drops an in-flight entry of `emailId` (nothing was sent, the key is free again). */
  release(workspaceId: string, key: string, emailId: string): Promise<void>;
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
  subject: string;
  html: string;
  text: string;
  previewText: string;
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

export interface DirectoryRepository {
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
}

export interface RendererRepository {
  /** Returns the compiled message, opaque bytes the delivery service merges later. */
  compile(input: CompileInput): Promise<Uint8Array>;
}

/** A delivery job in domain terms. */
export interface DeliveryJobData {
  deliveryId: string;
  workspaceId: string;
  emailId: string;
  messageId: string;
  recipient: string;
  variables: Record<string, unknown>;
  fromEmail: string;
  fromName: string;
  replyTo?: string;
  groupBy?: string;
  contentRef: string;
  enqueuedAt: Date;
}

export interface DeliveryQueue {
  /** Idempotent per deliveryId (the queue deduplicates). */
  publish(job: DeliveryJobData): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
