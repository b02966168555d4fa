/**
 * The broadcast domain: plain types that know nothing of HTTP, protobuf, NATS or the store.
 */

export type BroadcastStatus = "DRAFT" | "SCHEDULED" | "IN_PROGRESS" | "COMPLETED";
export const BROADCAST_STATUSES: BroadcastStatus[] = ["DRAFT", "SCHEDULED", "IN_PROGRESS", "COMPLETED"];

export type DeliveryMethod = "ASAP" | "PROGRESSIVE" | "SMART" | "WARMUP" | "OPTIMAL";
export const DELIVERY_METHODS: DeliveryMethod[] = ["ASAP", "PROGRESSIVE", "SMART", "WARMUP", "OPTIMAL"];

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
  /** Recipients who replied (DESIGN §10.4), each once; absent on broadcasts counted before replies were. */
  replied?: number;
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
 * pacing policy allows, `waiting` (A/B tests only) waits for the winner between the test
 * share and the rest, `draining` waits for the last outcomes.
 */
export interface SendingState {
  phase: "resolving" | "releasing" | "waiting" | "draining";
  /** Last contact id written into a page (resolution resumes after it). */
  cursor?: string;
  /** Recipient pages written so far. */
  pages: number;
  /**
   * Recipients written into pages so far, saved with the cursor: where the next page starts in
   * the audience, which fixes its exact part of an A/B test share (abtest.ts assignVariants).
   */
  resolved?: number;
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
 * contacts minus suppressions; the audience unit resolves it when sending starts. Filters are kept
 * as the JSON text given (a stored document cannot hold their `$` operators as field names);
 * only the audience unit reads them.
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
  /** The A/B test (DESIGN §9.8), when the broadcast has one. */
  abTest?: AbTest;
  /** Key of the locked compiled content while SCHEDULED or later. */
  contentKey?: string;
  sending?: SendingState;
  progress: Progress;
  /**
   * The W3C traceparent of the request that scheduled it (absent while tracing is off):
   * sending runs later, in traces of their own whose root spans link to it.
   */
  traceparent?: string;
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
  /** A/B test: the variant this recipient of the test share gets (absent: the rest, or no test). */
  variant?: number;
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
  /**
   * A/B test: a page of the rest of the audience, held (no nextDueAt, so never due) until
   * the winner is chosen; its recipients then get their due times and the winner.
   */
  held?: true;
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
export type OutcomeKind = "sent" | "deferred" | "bounced" | "failed" | "suppressed" | "opened" | "clicked" | "unsubscribed" | "replied";
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

// ---- A/B tests (DESIGN §9.8) --------------------------------------------------------------

/** The fields a variant may change; absent: the broadcast's own. */
export interface AbVariant {
  subject?: string;
  fromName?: string;
  previewText?: string;
  html?: string;
}
export const AB_VARIANT_FIELDS = ["subject", "fromName", "previewText", "html"] as const;

export type AbMetric = "opens" | "clicks";
export const AB_METRICS: AbMetric[] = ["opens", "clicks"];

/**
 * Where an A/B test is: `draft` until sending starts, `testing` while the test share is
 * resolved and released, `waiting` for the winner, `decided` (the rest goes out with the
 * winner), `cancelled` (cancelled during the wait: the rest is never sent).
 */
export type AbState = "draft" | "testing" | "waiting" | "decided" | "cancelled";

/** A variant's counts over the test share (its rates are computed from them). */
export interface AbVariantCounts {
  recipients: number;
  delivered: number;
  uniqueOpens: number;
  uniqueClicks: number;
}
export const emptyAbCounts = (): AbVariantCounts => ({ recipients: 0, delivered: 0, uniqueOpens: 0, uniqueClicks: 0 });

/** The test's settings (what a draft carries). */
export interface AbTestConfig {
  variants: AbVariant[];
  testShare: number;
  metric: AbMetric;
  waitForSeconds: number;
}

/** The settings and the state of an A/B test. */
export interface AbTest extends AbTestConfig {
  state: AbState;
  /**
   * Set when sending starts (the broadcast's id; a random one on tests started before that):
   * each recipient's variant is a pure function of it, the contact id and the page's place in
   * the audience (abtest.ts assignVariants).
   */
  seed?: string;
  /** When the wait ends (set when the test share is released). */
  waitUntil?: Date;
  /** Recipients released before the wait (the test share): the rest's pacing counts after them. */
  testReleased?: number;
  winner?: number;
  winnerChosenBy?: "metric" | "user";
  winnerChosenAt?: Date;
  /** The traceparent of a user's ChooseAbWinner request (absent: chosen by the rate, or tracing off). */
  winnerTraceparent?: string;
  /** Per variant, key `v<index>`. */
  stats: Record<string, AbVariantCounts>;
}

export const AB_MIN_VARIANTS = 2;
export const AB_MAX_VARIANTS = 4;
export const AB_MIN_SHARE = 0.05;
export const AB_MAX_SHARE = 0.5;
export const AB_MIN_WAIT_SECONDS = 300;
export const AB_MAX_WAIT_SECONDS = 7 * 24 * 3600;
/** Ledger waves of the rest start here, so PROGRESSIVE's bounce rate of the rest is its own. */
export const REST_WAVE_OFFSET = 1_000;

export const abStatsKey = (variant: number) => `v${variant}`;

/** Where variant `i` of a broadcast's compiled content is in the content store (`broadcast:<cmp>-v<i>`). */
export const variantContentRefOf = (broadcastId: string, variant: number) => `${contentRefOf(broadcastId)}-v${variant}`;
/** The locked compiled content of variant `i` (beside the broadcast's contentKey). */
export const variantContentKeyOf = (contentKey: string, variant: number) => `${contentKey}-v${variant}`;
