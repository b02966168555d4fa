import type {
  AbTest,
  AbVariantCounts,
  Broadcast,
  BroadcastAudience,
  BroadcastStatus,
  DeliveryMethod,
  OutcomeKind,
  Progress,
  Recipient,
  RecipientPage,
  SendingState,
  WindowReservation,
} from "./model.js";
import type { WarmupAccount } from "./pacing.js";
import type { DeliveryJobSpec, DeliveryPageSpec } from "@mailroom/pipeline/work.js";

/**
 * Everything the broadcast domain needs from the outside world. The domain depends only on
 * these interfaces; adapters/ implements them (store, Connect clients, JetStream), and unit
 * tests use in-memory ones (testing.ts).
 */

export type { Clock } from "@mailroom/kit/clock.js";

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ListQuery {
  status?: BroadcastStatus;
  limit: number;
  /** Id of the last item of the previous page. */
  before?: string;
}

export interface BroadcastRepository {
  insert(b: Broadcast): Promise<void>;
  find(workspaceId: string, id: string): Promise<Broadcast | null>;
  /** By id alone (delivery's content lookups carry the workspace separately). */
  findById(id: string): Promise<Broadcast | null>;
  /** Newest first. */
  list(workspaceId: string, query: ListQuery): Promise<Broadcast[]>;
  /** CAS DRAFT -> SCHEDULED; null when it was not a DRAFT any more. */
  schedule(workspaceId: string, id: string, set: { scheduledAt: Date; deliveryMethod: DeliveryMethod; contentKey: string; at: Date; traceparent?: string }): Promise<Broadcast | null>;
  /** CAS on status DRAFT: replaces the editable fields; null when it was not a DRAFT any more. */
  updateDraft(workspaceId: string, id: string, fields: DraftFields, at: Date): Promise<Broadcast | null>;
  /** CAS SCHEDULED -> DRAFT (sending has not started); returns the broadcast before, or null. */
  cancel(workspaceId: string, id: string, at: Date): Promise<Broadcast | null>;
  /** CAS: one due SCHEDULED broadcast becomes IN_PROGRESS (sentAt = now, work due now), with the given lease. */
  claimDue(now: Date, owner: string, leaseUntil: Date, initial: SendingState): Promise<Broadcast | null>;
  /** CAS: one IN_PROGRESS broadcast whose next work is due and whose lease is free. */
  claimWork(now: Date, owner: string, leaseUntil: Date): Promise<Broadcast | null>;
  /**
   * Updates sending state while holding the lease (extending it when given), adding `inc` to
   * the counters and `abInc` to A/B variants' counts in the same write; false when the lease
   * was lost.
   */
  saveSending(id: string, owner: string, sending: SendingState, inc?: Partial<Progress>, leaseUntil?: Date, abInc?: AbCountsInc): Promise<boolean>;
  /** Gives the lease back and says when to look again. */
  releaseLease(id: string, owner: string, workAt: Date): Promise<void>;
  /** Adds to counters (and a PROGRESSIVE wave's bounces, and A/B variants' counts). */
  increment(id: string, inc: Partial<Progress>, waveBounce?: number, abInc?: AbCountsInc): Promise<void>;
  /** Status, counters, sending state and the A/B test's state only: what pacing and completion read often (never the HTML). */
  progressOf(id: string): Promise<BroadcastProgressView | null>;
  /**
   * CAS IN_PROGRESS (draining) -> COMPLETED, setting the delivery counters to `exact` (and an
   * A/B test's variant counts to `abExact`) and marking BROADCAST_COMPLETED as not announced
   * yet, in the same write.
   */
  complete(id: string, at: Date, exact?: Partial<Progress>, abExact?: Record<string, AbVariantCounts>): Promise<boolean>;
  /** While holding the lease: the A/B test's seed, once (a CAS on its absence); the seed stored. */
  startAbTest(id: string, owner: string, seed: string): Promise<string | null>;
  /** While holding the lease: the test share is out; sending waits for the winner until `waitUntil`. */
  enterAbWait(id: string, owner: string, sending: SendingState, waitUntil: Date, testReleased: number): Promise<boolean>;
  /**
   * CAS: the winner of a broadcast that waits for one and has none (`workspaceId` when a user
   * chooses), with the variants' counts it was chosen on; the loop looks at it at once.
   */
  chooseAbWinner(id: string, choice: { workspaceId?: string; winner: number; by: "metric" | "user"; at: Date; stats?: Record<string, AbVariantCounts>; traceparent?: string }): Promise<boolean>;
  /** CAS: a broadcast waiting for its winner, none chosen, stops: the rest is never sent (draining, pauseReason). */
  cancelAbWait(workspaceId: string, id: string, at: Date, pauseReason: string): Promise<boolean>;
  /** COMPLETED broadcasts still marked unannounced (up to `limit`). */
  unannouncedCompletions(limit: number): Promise<Broadcast[]>;
  /** Drops the unannounced mark once BROADCAST_COMPLETED is stored on the stream. */
  completionAnnounced(id: string): Promise<void>;
}

/** What a DRAFT's editor may change (an absent abTest removes the draft's). */
export type DraftFields = Pick<
  Broadcast,
  "name" | "subject" | "previewText" | "fromEmail" | "fromName" | "html" | "text" | "replyTo" | "settings" | "allowUnknownVariables" | "audience" | "abTest"
>;

/** Additions to A/B variants' counts, by `v<index>`. */
export type AbCountsInc = Record<string, Partial<AbVariantCounts>>;

/** What pacing and completion read often: no HTML (an A/B test without its variants). */
export type BroadcastProgressView = Pick<Broadcast, "id" | "workspaceId" | "status" | "progress" | "sending"> & {
  abTest?: Omit<AbTest, "variants">;
};

/** "planned": recipients due in the minute (SMART and OPTIMAL, written when their due times are set). */
export type TimelineKind = "sent" | "delivered" | "opened" | "clicked" | "bounced" | "planned";
export interface TimelinePoint {
  /** Start of the minute. */
  at: Date;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  planned: number;
}

/** Per-minute buckets of counted outcomes (the console's progress chart). */
export interface TimelineRepository {
  add(broadcastId: string, at: Date, inc: Partial<Record<TimelineKind, number>>): Promise<void>;
  /** Oldest first. */
  list(broadcastId: string): Promise<TimelinePoint[]>;
}

/** Compiled messages (opaque bytes from the renderer), by key. */
export interface ContentRepository {
  put(key: string, workspaceId: string, compiled: Uint8Array, expiresAt?: Date): Promise<void>;
  get(key: string): Promise<{ workspaceId: string; compiled: Uint8Array } | null>;
  delete(key: string): Promise<void>;
}

export interface PageRepository {
  /** Writes (or rewrites, when resolution resumes) a page. */
  put(page: RecipientPage): Promise<void>;
  /** The due page (nextDueAt ≤ now) that comes first by dueAt, then seq. */
  nextDue(broadcastId: string, now: number): Promise<RecipientPage | null>;
  /** The earliest nextDueAt among unfinished pages, or null when every page is released. */
  earliestDue(broadcastId: string): Promise<number | null>;
  /** CAS on `released`: records a reserved window. */
  reserve(pageId: string, released: number, reservedUpTo: number, reservation: WindowReservation): Promise<boolean>;
  /** CAS on `released`: the reserved window went out. */
  markReleased(pageId: string, released: number, nextDueAt: number | undefined): Promise<boolean>;
  /** Drops a completed broadcast's pages (the ledger keeps what later events need). */
  deleteAll(broadcastId: string): Promise<void>;
  /** A/B test: up to `limit` pages of the rest still held for the winner. */
  held(broadcastId: string, limit: number): Promise<RecipientPage[]>;
  /** A/B test: a held page becomes due (recipients with their due times, sorted); false when it was not held any more. */
  unhold(pageId: string, recipients: Recipient[], nextDueAt: number): Promise<boolean>;
}

export interface LedgerEntry {
  deliveryId: string;
  broadcastId: string;
  /** PROGRESSIVE wave (release sequence), for per-wave bounce rates. */
  wave: number;
  /** Settled without delivery (suppressed, over the monthly limit). */
  settled?: "suppressed" | "failed";
  /** A/B test: the variant of a test-share recipient (absent for the rest). */
  variant?: number;
}

export interface MarkResult {
  /** The delivery exists in this broadcast's ledger. */
  known: boolean;
  /** First time this kind was seen for the delivery. */
  first: boolean;
  /** This event gave the delivery its first final outcome. */
  becameFinal: boolean;
  /** The delivery had been sent before (an asynchronous bounce after acceptance). */
  wasSent: boolean;
  wave: number;
  /** A/B test: the delivery's variant (test share only). */
  variant?: number;
}

/** One entry per released delivery: what happened to it, each kind recorded once. */
export interface DeliveryLedger {
  /** Idempotent: entries that exist already are left as they are. */
  add(entries: LedgerEntry[]): Promise<void>;
  mark(deliveryId: string, kind: OutcomeKind): Promise<MarkResult>;
  /**
   * `mark` for many (delivery, kind) pairs of one broadcast in one read and one write: the
   * results in order. A pair repeated in the list counts as first once.
   */
  markMany(marks: ReadonlyArray<{ deliveryId: string; kind: OutcomeKind }>): Promise<MarkResult[]>;
  countFinal(broadcastId: string): Promise<number>;
  /**
   * The delivery counters as the ledger has them. Marking an outcome and adding it to the
   * counters are two writes, so a process killed between them loses one count; completion
   * sets the counters from this exact tally.
   */
  tally(broadcastId: string): Promise<DeliveryTally>;
  /** A/B test: each variant's counts over the test share as the ledger has them, by `v<index>`. */
  variantTally(broadcastId: string): Promise<Record<string, AbVariantCounts>>;
}

export type DeliveryTally = Pick<Progress, "sent" | "delivered" | "deferred" | "bounced" | "failed" | "suppressed" | "finalized">;

export interface WarmupRepository {
  get(workspaceId: string): Promise<WarmupAccount | undefined>;
  /** CAS: takes `count` of today's cap (the account as `today` computed it); false when it moved. */
  take(workspaceId: string, expected: WarmupAccount | undefined, today: WarmupAccount, count: number): Promise<boolean>;
}

export interface WorkspaceInfo {
  id: string;
  timezone: string;
  broadcastEarlyAccess: boolean;
  emailApiAddon: boolean;
  verified: boolean;
  sendingAccountNew: boolean;
  /** An operator paused the workspace's sending / banned it (absent: neither). */
  sendingPaused?: boolean;
  banned?: boolean;
  /** The operator's reason for the ban, else for the pause. */
  holdReason?: string;
}

export interface SenderCheck {
  allowed: boolean;
  allowedEmails: string[];
  allowedDomains: string[];
}

export interface Contact {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  timezone: string;
  properties: Record<string, unknown>;
}

export interface UsageReservation {
  granted: boolean;
  /** Sends counted (the addresses not suppressed), 0 unless granted. */
  reserved: number;
  /** Lowercased suppressed addresses (not counted). */
  suppressed: string[];
  period: string;
}

/**
 * Workspaces, senders, members and usage (the accounts unit); contacts, suppressions, audiences
 * and engagement (the audience unit). One port: the adapter (adapters/directory.ts) asks both.
 */
export interface Directory {
  /** Cached briefly: gating reads it on every call. */
  workspace(workspaceId: string): Promise<WorkspaceInfo>;
  checkSender(workspaceId: string, from: string): Promise<SenderCheck>;
  customPropertySlugs(workspaceId: string): Promise<string[]>;
  members(workspaceId: string): Promise<string[]>;
  /** Null when the workspace has no contact with that address. */
  contactByEmail(workspaceId: string, email: string): Promise<Contact | null>;
  /**
   * The broadcast audience in contact-id order, in batches: its subscribed contacts after
   * `afterId` (exclusive), topic opt-outs left out. Suppressions are not applied here. A group
   * deleted since the broadcast was written counts as empty; a deleted segment or topic fails
   * with `audience_not_found`.
   */
  subscribedContacts(workspaceId: string, audience: BroadcastAudience, afterId?: string): AsyncIterable<Contact[]>;
  /** Lowercased suppressed addresses among `emails`. */
  suppressed(workspaceId: string, emails: string[]): Promise<Set<string>>;
  /**
   * How many contacts are in the audience now (the audience unit counts with its indexes; no
   * contact is streamed). Throws the audience unit's refusal of the audience (400
   * `audience_not_found`, `invalid_filter`, `invalid_audience`).
   */
  audienceCount(workspaceId: string, audience: BroadcastAudience): Promise<number>;
  /** Sends left this month (limit - used). */
  usageLeft(workspaceId: string): Promise<number>;
  /** Suppression check plus an all-or-nothing usage reservation for the others. */
  reserveSendable(workspaceId: string, emails: string[]): Promise<UsageReservation>;
  releaseUsage(workspaceId: string, count: number, period: string): Promise<void>;
  /**
   * OPTIMAL: each contact's best hour within 24 hours of `windowStart` (epoch ms, in the order
   * given), from its opens and clicks of the last 90 days (the audience unit's engagement records);
   * undefined for a contact with too little history (sent as SMART).
   */
  bestHours(workspaceId: string, windowStart: Date, defaultTimeZone: string, contacts: { id: string; timezone: string }[]): Promise<(number | undefined)[]>;
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
  /** The workspace's zone: Liquid's `date` for a contact without a valid `timezone` property. */
  timeZone?: string;
}

export interface PreviewRecipient {
  email: string;
  contactId: string;
  messageId: string;
  variables: Record<string, unknown>;
}

export interface RenderedMessage {
  subject: string;
  html: string;
  text: string;
  previewText: string;
  /** The recipient's unsubscribe URL as merged into the message (the pre-send check looks for its link). */
  unsubscribeUrl?: string;
}

export interface Renderer {
  detectVariables(input: { html: string; subject: string; previewText: string; customProperties: string[] }): Promise<{ detected: string[]; unknown: string[] }>;
  /** Broadcast compilation (footer unless {{unsubscribeUrl}}, tracking, preheader, text). */
  compile(input: CompileInput): Promise<Uint8Array>;
  /** Compiles and merges for one recipient in one call (previews). */
  render(input: CompileInput, recipient: PreviewRecipient): Promise<RenderedMessage>;
}

/**
 * The broadcast's webhook events (DESIGN §9.2), each published only once the status write it
 * reports committed, with an id derived from the broadcast and the event
 * (`<broadcastId>.started`), so publishing again is deduplicated. `data` is `{ broadcast }`
 * in the public API's shape, counters included.
 */
export interface BroadcastEvents {
  /** BROADCAST_STARTED: the status became IN_PROGRESS. */
  started(broadcast: Broadcast): Promise<void>;
  /** BROADCAST_COMPLETED: the status became COMPLETED. */
  completed(broadcast: Broadcast): Promise<void>;
}

/**
 * The one publisher of delivery work (services/pipeline DeliveryJobPublisher): a broadcast's
 * windows go out as page jobs, test sends as single jobs. Idempotent per msgID (page id,
 * delivery id) within the stream's duplicate window.
 */
export interface DeliveryQueue {
  publishJob(job: DeliveryJobSpec): Promise<void>;
  publishPage(page: DeliveryPageSpec): Promise<void>;
}

/**
 * The content store delivery reads compiled content from (services/pipeline ContentStore):
 * `broadcast:<cmp_id>` (and a test send's own ref) written before any job naming it.
 */
export interface DeliveryContent {
  put(workspaceId: string, contentRef: string, compiled: Uint8Array): Promise<void>;
  delete(workspaceId: string, contentRef: string): Promise<void>;
}

export type { Recipient };

/**
 * Runs one step of a broadcast's sending (resolving its audience, releasing page jobs, picking
 * an A/B winner). The adapter (adapters/tracing.ts) makes the step the root span of a trace of
 * its own, linked to the request that scheduled the broadcast (`broadcast.traceparent`) and to
 * a user's choice of the A/B winner, so each page job's publish, and delivery's handling of it,
 * is in a trace linked to the schedule request. Absent: the step runs as is.
 */
export type SendingStepScope = <T>(broadcast: Broadcast, step: () => Promise<T>) => Promise<T>;
