/**
 * The delivery service's ports: the interfaces the domain needs. Every bit of I/O (store,
 * RPC, SMTP, JetStream, KV, files) is an adapter behind one of them (src/adapters/), so
 * tests build the service with any of them replaced.
 */
import type { WireBody } from "@mailroom/content/merge.js";
import type { Job, JobSource, Tag, Variables } from "./job.js";

// ---------- deliveries (the exactly-once ledger) ----------

export type DeliveryState = "sending" | "deferred" | "sent" | "bounced" | "failed";
export type OutcomeType = "sent" | "deferred" | "bounced" | "failed";

export type Outcome = {
  type: OutcomeType;
  detail: string;
  smtpCode: number;
  attempt: number;
  /** The route that carried (or last tried) the message; absent for outcomes without an SMTP attempt. */
  route?: string;
};

export type DeliveryRecord = {
  _id: string;
  workspaceId: string;
  state: DeliveryState;
  /** SMTP transactions started (claims taken). */
  attempts: number;
  claimedBy?: string;
  claimedAt?: Date;
  /** The final (or last deferred) outcome, kept so its event can be republished. */
  outcome?: Outcome;
  createdAt: Date;
  updatedAt: Date;
};

export type ClaimResult = { claimed: true; attempts: number } | { claimed: false; record: DeliveryRecord | null };

export interface DeliveriesRepository {
  get(deliveryId: string): Promise<DeliveryRecord | null>;
  /** The records of several deliveries in one store round (a redelivered page's recipients); absent ids are unknown. */
  getMany(deliveryIds: readonly string[]): Promise<Map<string, DeliveryRecord>>;
  /**
   * Compare-and-set: takes the delivery for one SMTP transaction when it is new, deferred,
   * or held by a claim older than `staleBefore` (its worker died mid-send).
   */
  claim(deliveryId: string, workspaceId: string, worker: string, now: Date, staleBefore: Date): Promise<ClaimResult>;
  /**
   * A live worker's claims stay its own: their `claimedAt` moves to `now` while their SMTP
   * transactions wait or run, so `staleBefore` only ever finds a dead worker's claim.
   */
  refreshClaims(deliveryIds: readonly string[], worker: string, now: Date): Promise<void>;
  /** Back to claimable after a transient failure (only by the worker holding the claim). */
  markDeferred(deliveryId: string, worker: string, outcome: Outcome, now: Date): Promise<void>;
  /** Final state. A sent delivery is never turned into anything else. */
  markFinal(deliveryId: string, workspaceId: string, outcome: Outcome, now: Date): Promise<void>;
}

// ---------- content ----------

/** Content or sender that will never become valid (unknown id, bad request): fail, don't retry. */
export class PermanentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PermanentError";
  }
}

/**
 * Compiled content as the domain sees it: whose it is. What else it holds is the business
 * of the content source and the merger, which come as a pair.
 */
export interface CompiledContent {
  readonly workspaceId: string;
  /** What a transactional email carries beside its bodies (DESIGN §9.5); absent: nothing. */
  readonly carried?: Carried;
}

/** The Cc header, custom headers and attachments stored with an email's content. */
export interface Carried {
  /** The Cc header as the sender wrote it (`addr` or `Name <addr>` each). */
  cc: readonly string[];
  /** Custom headers in the sender's order. */
  headers: ReadonlyArray<{ name: string; value: string }>;
  /** The attachments as MIME parts, encoded once per content. */
  attachments: readonly EncodedPart[];
  /**
   * A forwarded message (DESIGN §10.4): sent as these bytes, verbatim (no merge, no headers or
   * DKIM signature of ours), with `envelopeFrom` (an SRS address; "" is the null sender) as MAIL FROM.
   */
  forwarded?: { raw: Uint8Array; envelopeFrom: string };
}

/**
 * An attachment's finished MIME part (its headers, a blank line, the base64 body), shared
 * by every message built from the same content: retries and recipients never encode again.
 */
export interface EncodedPart {
  /** Has a Content-ID: goes into multipart/related beside the HTML that refers to it. */
  inline: boolean;
  bytes: Buffer;
}

export interface ContentSource {
  /** The compiled message behind a job's content_ref ("email:trs_…" / "broadcast:cmp_…"). */
  get(workspaceId: string, contentRef: string): Promise<CompiledContent>;
  /** The compiled message a job carries itself (its StoredContent bytes); throws PermanentError when they do not decode. */
  decode(workspaceId: string, contentRef: string, stored: Uint8Array): CompiledContent;
}

export interface MergeRecipient {
  email: string;
  contactId: string;
  messageId: string;
  variables: Variables;
}

/** A body as text, or already merged to wire bytes (UTF-8, CRLF) by the renderer. */
export type Body = string | WireBody;

export interface MergedContent {
  subject: string;
  html: Body;
  text: Body;
  previewText: string;
  unsubscribeUrl: string;
  /** The one-click (POST) unsubscribe URL for List-Unsubscribe; empty when none. */
  listUnsubscribeUrl: string;
  /**
   * The content is mail a contact may leave (broadcast or automation content, by its compiled
   * kind): List-Unsubscribe goes with it whatever lane its job came by.
   */
  offersUnsubscribe?: boolean;
}

export interface ContentMerger {
  merge(compiled: CompiledContent, recipient: MergeRecipient, ctx: { secret: string; publicUrl: string }): MergedContent;
}

// ---------- senders (accounts unit) and suppressions (audience unit) ----------

export interface DkimKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
}

export interface SenderCheck {
  allowed: boolean;
  address: string;
  name: string;
  dkim?: DkimKey;
}

export interface SenderDirectory {
  checkSender(workspaceId: string, from: string): Promise<SenderCheck>;
  /**
   * A cc or bcc address refused for good: suppressed directly, as no event names it (the
   * recipient's own hard bounce is suppressed by the audience unit from the BOUNCED event).
   */
  suppressOther(workspaceId: string, email: string, detail: string): Promise<void>;
}

// ---------- transport ----------

export interface OutgoingMail {
  /**
   * Envelope sender and recipient (MAIL FROM / RCPT TO); `others` are the email's cc and bcc
   * addresses, RCPT TO in the same transaction (the message's outcome follows `to`).
   */
  envelope: { from: string; to: string; others?: readonly string[] };
  from: { name: string; address: string };
  to: string;
  /** The Cc header's addresses (`addr` or `Name <addr>`); never a Bcc header. */
  cc?: readonly string[];
  /** Attachment parts (inline ones with a Content-ID), encoded once per content. */
  attachments?: readonly EncodedPart[];
  /** One address or several (`addr` or `Name <addr>` each). */
  replyTo?: string | readonly string[];
  subject: string;
  html: Body;
  /** Empty (string or bytes): no text/plain part. */
  text: Body;
  messageId: string;
  headers: Array<{ key: string; value: string }>;
  /**
   * Names what this mail shares with others of the same content and sender (a broadcast's
   * content ref and loaded version), so the transport may build that part once; unset:
   * build the message from scratch.
   */
  skeleton?: string;
  dkim?: { domainName: string; keySelector: string; privateKey: string; headerFieldNames: string };
  /** For local capture: who the mail belongs to. */
  meta: { deliveryId: string; workspaceId: string };
  /** The whole message, sent as it is (a forward): nothing is built or signed. */
  raw?: Uint8Array;
  /** The lane the job came on: routes are chosen per lane (DESIGN §9.7). */
  lane: Lane;
}

/** Delivery's two queues; routes may be reserved for one of them. */
export type Lane = "transactional" | "broadcast";

export interface SendResult {
  /** SMTP reply code and text of the accepted DATA (or a capture note). */
  code: number;
  response: string;
  /** Envelope `others` the relay refused at RCPT TO while it took the message for `to`. */
  refused?: ReadonlyArray<{ address: string; code: number; text: string }>;
  /** The route that carried it (a relay's name, "direct", "capture"); recorded on the email and its events. */
  route?: string;
}

/** Thrown by a transport when the relay did not accept the message. */
export class SmtpFailure extends Error {
  constructor(
    message: string,
    /** SMTP reply code, or 0 when no reply came (connection refused, dropped, timed out). */
    readonly code: number,
    /**
     * The reply was about this recipient or message (RCPT TO, DATA), not about the relay
     * itself (greeting, auth, MAIL FROM): only those 5xx replies are hard bounces.
     */
    readonly aboutRecipient: boolean,
    /**
     * Nothing of the message reached the server (refused or cut before DATA's body went
     * out, or a 4xx/5xx before it): another route may take it without a duplicate.
     */
    readonly beforeData = false,
    /** The route that was tried last (set by the routing transport). */
    public route?: string,
  ) {
    super(message);
    this.name = "SmtpFailure";
  }
}

export interface MailTransport {
  readonly description: string;
  readonly capturing: boolean;
  send(mail: OutgoingMail): Promise<SendResult>;
  close(): Promise<void>;
}

// ---------- events ----------

export interface OutcomeEvent {
  type: OutcomeType;
  deliveryId: string;
  workspaceId: string;
  source: JobSource;
  emailId: string;
  broadcastId: string;
  messageId: string;
  recipient: string;
  contactId: string;
  groupBy: string;
  detail: string;
  smtpCode: number;
  attempt: number;
  /**
   * Bounced: the failure is permanent (a 5xx about the recipient; the address is suppressed).
   * Readers count it as a hard bounce only when this says so (events.proto's `permanent`).
   */
  permanent?: boolean;
  /** The email's tags (DESIGN §9.5). */
  tags?: readonly Tag[];
  /** The message's cc and bcc envelope recipients (a later bounce report may name one of them). */
  otherRecipients?: readonly string[];
  /** The route that carried (or last tried) the message (DESIGN §9.7). */
  route?: string;
}

export interface EventPublisher {
  publish(event: OutcomeEvent): Promise<void>;
}

// ---------- jobs handed on ----------

/**
 * Where a page's recipient goes when it cannot finish with the page (a deferral to retry):
 * a delivery job of its own, not to be handled before `notBefore` (epoch ms).
 */
export interface RetryQueue {
  handOn(job: Job, notBefore: number): Promise<void>;
}

// ---------- locally captured mail (no relay configured) ----------

export interface CapturedEntry {
  id: string;
  deliveryId: string;
  workspaceId: string;
  messageId: string;
  from: string;
  to: string;
  subject: string;
  capturedAt: string;
  size: number;
}

export interface CapturedMessage {
  entry: CapturedEntry;
  raw: Buffer;
  html: string;
  text: string;
}

export interface CapturedMail {
  /** Newest first, older than `before` (an id), matching `query` (subject or recipient); `more` when older ones match. */
  list(limit: number, opts?: { workspaceId?: string; query?: string; before?: string }): Promise<{ entries: CapturedEntry[]; more: boolean }>;
  get(id: string): Promise<CapturedMessage | undefined>;
  /** Forgets every captured message; how many there were. */
  clear(): Promise<number>;
}

// ---------- pacing (shared across processes) ----------

export interface TokenGrant {
  granted: number;
  /** When nothing was granted: how long until a token is due. */
  waitMs: number;
}

export interface PacingRepository {
  isPaused(broadcastId: string): boolean;
  setPaused(broadcastId: string, paused: boolean): Promise<void>;
  workspaceRate(workspaceId: string): number;
  setWorkspaceRate(workspaceId: string, messagesPerSecond: number): Promise<void>;
  pausedBroadcasts(): string[];
  workspaceRates(): Array<{ workspaceId: string; messagesPerSecond: number }>;
  /** Takes up to `want` tokens from the shared bucket `key` (rate per second, capacity burst). */
  takeTokens(key: string, rate: number, burst: number, want: number): Promise<TokenGrant>;
  close(): Promise<void>;
}

/** Counters and timings an operator scrapes (Prometheus in production; absent in unit tests). */
export interface DeliveryMetrics {
  /** One SMTP attempt's outcome, or a job failed before any attempt. */
  outcome(lane: string, outcome: "sent" | "deferred" | "bounced" | "failed"): void;
  /** An SMTP transaction starts; call the returned function when it ends. */
  sendStarted(lane: string): () => void;
  /**
   * One SMTP attempt's outcome on a route, to a recipient's domain, and how long the send
   * took (a failover to another route included).
   */
  routeOutcome?(route: string, domain: string, outcome: OutcomeType, seconds: number): void;
}
