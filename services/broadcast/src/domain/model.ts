/**
 * The broadcast domain: plain types that know nothing of HTTP, protobuf, NATS or the store.
 */

export type BroadcastStatus = "DRAFT" | "SCHEDULED" | "IN_PROGRESS" | "COMPLETED";
export const BROADCAST_STATUSES: BroadcastStatus[] = ["DRAFT", "SCHEDULED", "IN_PROGRESS", "COMPLETED"];

export type DeliveryMethod = "ASAP" | "PROGRESSIVE" | "SMART" | "WARMUP";
export const DELIVERY_METHODS: DeliveryMethod[] = ["ASAP", "PROGRESSIVE", "SMART", "WARMUP"];

export interface BroadcastSettings {
  trackOpens: boolean;
  trackClicks: boolean;
}

/** Live counters; see BroadcastProgress in the proto for what each one means. */
export interface Progress {
  recipients: number;
  released: number;
  sent: number;
  delivered: number;
  deferred: number;
  bounced: number;
  failed: number;
  suppressed: number;
  opened: number;
  clicked: number;
  unsubscribed: number;
  /** Deliveries with a final outcome (sent, bounced, failed, suppressed); drives COMPLETED. */
  finalized: number;
}

export const emptyProgress = (): Progress => ({
  recipients: 0,
  released: 0,
  sent: 0,
  delivered: 0,
  deferred: 0,
  bounced: 0,
  failed: 0,
  suppressed: 0,
  opened: 0,
  clicked: 0,
  unsubscribed: 0,
  finalized: 0,
});

/**
 * Where sending is: `resolving` writes the audience into recipient pages (resumable from
 * `cursor`, the last contact id written), `releasing` hands windows to delivery as the
 * pacing policy allows, `draining` waits for the last outcomes.
 */
export interface SendingState {
  phase: "resolving" | "releasing" | "draining";
  /** Last contact id written into a page (resolution resumes after it). */
  cursor?: string;
  /** Recipient pages written so far. */
  pages: number;
  /** The workspace's timezone at start (SMART). */
  workspaceTimezone: string;
  /** PROGRESSIVE: bounces per wave index. */
  waveBounces: Record<string, number>;
  /** Why releasing stopped early. */
  pauseReason?: string;
  /**
   * When the compiled content was last written to the content store (epoch ms). Written
   * before the first window is released and again when releasing resumes more than a day
   * later, so a paced broadcast (WARMUP over weeks) never outlives its entry (14 days).
   */
  contentStoredAt?: number;
  /**
   * Draining: the finalized counter at the last completion check. The ledger is counted
   * (a scan of every recipient's entry) only when the counter has not moved since.
   */
  finalizedAtCheck?: number;
}

/**
 * Who a broadcast goes to (DESIGN §9.4): exactly one of `all`, `groups` (ids or publicIds, their
 * union), `segmentId`, `filterJson`; optionally `exclude` and `topicId`. Always only SUBSCRIBED
 * contacts minus suppressions; the directory resolves it when sending starts. Filters are kept
 * as the JSON text given (a stored document cannot hold their `$` operators as field names);
 * only the directory reads them.
 */
export interface BroadcastAudience {
  all?: true;
  groups?: string[];
  segmentId?: string;
  filterJson?: string;
  exclude?: { groups?: string[]; segmentId?: string; filterJson?: string };
  topicId?: string;
}

export interface Broadcast {
  id: string;
  workspaceId: string;
  name: string;
  status: BroadcastStatus;
  subject: string;
  previewText: string;
  fromEmail: string;
  fromName: string;
  /** Stored byte for byte as created. */
  html: string;
  text: string;
  replyTo: string[];
  audience: BroadcastAudience;
  settings: BroadcastSettings;
  allowUnknownVariables: boolean;
  createdAt: Date;
  updatedAt: Date;
  scheduledAt?: Date;
  sentAt?: Date;
  completedAt?: Date;
  deliveryMethod?: DeliveryMethod;
  /** Key of the locked compiled content while SCHEDULED or later. */
  contentKey?: string;
  sending?: SendingState;
  progress: Progress;
}

/** One recipient as resolved at start, with the merge data delivery needs. */
export interface Recipient {
  contactId: string;
  email: string;
  firstName: string;
  lastName: string;
  timezone: string;
  properties: Record<string, unknown>;
  /** When this recipient may be released (epoch ms); SMART spreads it, others use the start. */
  dueAt: number;
}

/**
 * A page of recipients (the outbox of a broadcast). Recipients are sorted by dueAt, so
 * what is released is always a prefix: [0, released). A window is first reserved
 * ([released, reservedUpTo), with the usage reservation's result), then published, then
 * marked released; a restart between the two publishes the reserved window again, which
 * the queue deduplicates by delivery id.
 */
export interface RecipientPage {
  id: string;
  broadcastId: string;
  seq: number;
  recipients: Recipient[];
  released: number;
  reservedUpTo: number;
  reservation?: WindowReservation;
  /** dueAt of the first unreleased recipient; absent once the page is fully released. */
  nextDueAt?: number;
}

export interface WindowReservation {
  granted: boolean;
  /** Lowercased addresses found on the suppression list; they are settled, not sent. */
  suppressed: string[];
  period: string;
  /** PROGRESSIVE wave of the window's first recipient (global release sequence). */
  firstSequence: number;
}

/** Outcome kinds the broadcast counts. */
export type OutcomeKind = "sent" | "deferred" | "bounced" | "failed" | "suppressed" | "opened" | "clicked" | "unsubscribed";
export const FINAL_OUTCOMES: ReadonlySet<OutcomeKind> = new Set(["sent", "bounced", "failed", "suppressed"]);

export const HTML_MAX_BYTES = 512_000;
export const HTML_CLIP_BYTES = 102 * 1024;
export const HTML_CLIP_WARNING = "html_over_102kb_may_be_clipped";
export const SCHEDULE_HORIZON_MS = 90 * 24 * 3600 * 1000;
export const TEST_MAX_RECIPIENTS = 10;
export const TEST_SUBJECT_PREFIX = "[TEST] ";
export const LIST_DEFAULT_LIMIT = 20;
export const LIST_MAX_LIMIT = 100;
export const PAGE_SIZE = 1_000;

/** Where a broadcast's compiled content is in the content store. */
export const contentRefOf = (broadcastId: string) => `broadcast:${broadcastId}`;

/** Delivery id of a broadcast message: one per (broadcast, contact), stable across retries. */
export const deliveryIdOf = (broadcastId: string, contactId: string) => `${broadcastId}.${contactId}`;

/** Message-ID (without brackets) of a broadcast message: stable, so a republished job is identical. */
export function messageIdOf(broadcastId: string, contactId: string, fromEmail: string): string {
  return `${contactId}.${broadcastId}@${fromEmail.slice(fromEmail.lastIndexOf("@") + 1) || "mailroom.local"}`;
}
