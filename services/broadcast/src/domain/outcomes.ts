import { abStatsKey, contentRefOf, deliveryIdOf, variantContentRefOf, type AbTest, type AbVariantCounts, type Broadcast, type OutcomeKind, type Progress } from "./model.js";
import type {
  AbCountsInc,
  BroadcastEvents,
  BroadcastRepository,
  Clock,
  DeliveryContent,
  DeliveryLedger,
  Logger,
  MarkResult,
  PageRepository,
  TimelineKind,
  TimelineRepository,
} from "./ports.js";

/** Events about a recipient (named by contact id, not delivery id); a reply is one (DESIGN §10.4). */
const TRACKING: ReadonlySet<OutcomeKind> = new Set(["opened", "clicked", "unsubscribed", "replied"]);

/** A MailEvent about a broadcast message, in domain terms. */
export interface BroadcastEvent {
  kind: OutcomeKind;
  broadcastId: string;
  /** Set on delivery outcomes (sent, deferred, bounced, failed, suppressed). */
  deliveryId: string;
  /** Set on tracking events (opened, clicked, unsubscribed), which carry no delivery id. */
  contactId: string;
  messageId: string;
}

export interface OutcomeDeps {
  broadcasts: BroadcastRepository;
  pages: PageRepository;
  ledger: DeliveryLedger;
  timeline: TimelineRepository;
  clock: Clock;
  logger: Logger;
  /** The content store: a completed broadcast's entry is deleted (best effort; the bucket's max age drops it anyway). */
  deliveryContent?: Pick<DeliveryContent, "delete">;
  /** BROADCAST_COMPLETED goes out through it (none when absent). */
  events?: BroadcastEvents;
}

/**
 * Counts one event into the broadcast's progress. Each (delivery, kind) counts once, so a
 * redelivered event, a reloaded pixel or a second click changes nothing; tracking events
 * of test sends (whose message ids are not the broadcast's) are ignored. The delivery that
 * gives the last recipient a final outcome completes the broadcast. Returns whether
 * anything was counted.
 */
export async function applyEvent(deps: OutcomeDeps, event: BroadcastEvent): Promise<boolean> {
  const deliveryId = event.deliveryId || (event.contactId ? deliveryIdOf(event.broadcastId, event.contactId) : "");
  if (!deliveryId || !event.broadcastId) return false;
  const tracking = TRACKING.has(event.kind);
  // Test sends' tracking comes with another Message-ID (format-1 tokens) or on the test
  // subject (format-3 tokens carry no Message-ID, and name test sends as such).
  if (tracking && event.messageId && !event.messageId.startsWith(`${event.contactId}.${event.broadcastId}@`)) return false;
  const mark = await deps.ledger.mark(deliveryId, event.kind);
  if (!mark.known || !mark.first) return false;
  const inc: Partial<Progress> = { [event.kind]: 1 };
  if (event.kind === "sent") inc.delivered = 1;
  if (event.kind === "bounced" && mark.wasSent) inc.delivered = -1;
  if (mark.becameFinal) inc.finalized = 1;
  const abInc: AbCountsInc = {};
  addAbCounts(abInc, mark, event.kind);
  await deps.broadcasts.increment(event.broadcastId, inc, event.kind === "bounced" ? mark.wave : undefined, abInc);
  // Behind the same first-mark as the counters, so a redelivered event adds no point either.
  // A chart, not a ledger: a crash between the writes loses a point (completion fixes the
  // counters from the ledger, not the chart).
  const points = timelineInc(inc);
  if (points) await deps.timeline.add(event.broadcastId, deps.clock.now(), points).catch((err) => deps.logger.warn({ err, broadcastId: event.broadcastId }, "timeline point lost"));
  if (!mark.becameFinal) return true;
  const after = await deps.broadcasts.progressOf(event.broadcastId);
  if (after && after.status === "IN_PROGRESS" && after.sending?.phase === "draining" && after.progress.finalized >= finalTarget(after)) {
    await completeBroadcast(deps, after, after.progress.recipients);
  }
  return true;
}

/**
 * `applyEvent` for a batch of events of one broadcast (the consumer gathers what arrives
 * while the previous batch is written): one ledger read and write, one counter update per
 * bounce wave, one timeline point and one completion check for the whole batch, instead of
 * three writes per message. Counts exactly what applying them one by one would count.
 */
export async function applyEvents(deps: OutcomeDeps, broadcastId: string, events: readonly BroadcastEvent[]): Promise<void> {
  const marks: Array<{ deliveryId: string; kind: OutcomeKind }> = [];
  for (const event of events) {
    const deliveryId = event.deliveryId || (event.contactId ? deliveryIdOf(event.broadcastId, event.contactId) : "");
    if (!deliveryId || event.broadcastId !== broadcastId) continue;
    const tracking = TRACKING.has(event.kind);
    if (tracking && event.messageId && !event.messageId.startsWith(`${event.contactId}.${event.broadcastId}@`)) continue;
    marks.push({ deliveryId, kind: event.kind });
  }
  if (marks.length === 0) return;
  const results = await deps.ledger.markMany(marks);
  const inc: Partial<Progress> = {};
  const add = (field: keyof Progress, n: number) => (inc[field] = (inc[field] ?? 0) + n);
  const bouncesByWave = new Map<number, number>();
  const abInc: AbCountsInc = {};
  let becameFinal = false;
  results.forEach((mark, i) => {
    if (!mark.known || !mark.first) return;
    const kind = marks[i]!.kind;
    add(kind, 1);
    addAbCounts(abInc, mark, kind);
    if (kind === "sent") add("delivered", 1);
    if (kind === "bounced") {
      if (mark.wasSent) add("delivered", -1);
      bouncesByWave.set(mark.wave, (bouncesByWave.get(mark.wave) ?? 0) + 1);
    }
    if (mark.becameFinal) {
      add("finalized", 1);
      becameFinal = true;
    }
  });
  if (Object.keys(inc).length === 0) return;
  // The wave's bounce count rides on an increment (PROGRESSIVE reads it): one per wave bounced in.
  const [firstWave, ...otherWaves] = [...bouncesByWave];
  if (!firstWave) await deps.broadcasts.increment(broadcastId, inc, undefined, abInc);
  else {
    const { bounced: _bounced, ...rest } = inc;
    await deps.broadcasts.increment(broadcastId, { ...rest, bounced: firstWave[1] }, firstWave[0], abInc);
    for (const [wave, n] of otherWaves) await deps.broadcasts.increment(broadcastId, { bounced: n }, wave);
  }
  const points = timelineInc(inc);
  if (points) await deps.timeline.add(broadcastId, deps.clock.now(), points).catch((err) => deps.logger.warn({ err, broadcastId }, "timeline point lost"));
  if (!becameFinal) return;
  const after = await deps.broadcasts.progressOf(broadcastId);
  if (after && after.status === "IN_PROGRESS" && after.sending?.phase === "draining" && after.progress.finalized >= finalTarget(after)) {
    await completeBroadcast(deps, after, after.progress.recipients);
  }
}

/**
 * An A/B test-share delivery's first outcome of a kind, in its variant's counts: delivered
 * (sent, less a bounce after it), unique opens, unique clicks. The rest counts in the
 * broadcast's progress only.
 */
function addAbCounts(abInc: AbCountsInc, mark: MarkResult, kind: OutcomeKind): void {
  if (mark.variant === undefined) return;
  const field: keyof AbVariantCounts | undefined =
    kind === "sent" ? "delivered" : kind === "bounced" && mark.wasSent ? "delivered" : kind === "opened" ? "uniqueOpens" : kind === "clicked" ? "uniqueClicks" : undefined;
  if (!field) return;
  const counts = (abInc[abStatsKey(mark.variant)] ??= {});
  counts[field] = (counts[field] ?? 0) + (kind === "bounced" ? -1 : 1);
}

/** The ledger's variant counts for every variant the test has (one without an entry: zeros). */
export function withEveryVariant(stats: Record<string, AbVariantCounts>, tally: Record<string, AbVariantCounts>): Record<string, AbVariantCounts> {
  return Object.fromEntries(Object.keys(stats).map((key) => [key, tally[key] ?? { recipients: 0, delivered: 0, uniqueOpens: 0, uniqueClicks: 0 }]));
}

/**
 * Final outcomes a draining broadcast waits for: every recipient, or, when releasing was
 * stopped early (PROGRESSIVE by its bounce rate), every recipient that was released.
 */
export function finalTarget(b: Pick<Broadcast, "progress" | "sending">): number {
  return b.sending?.pauseReason ? b.progress.released : b.progress.recipients;
}

/**
 * IN_PROGRESS -> COMPLETED (a CAS: whoever notices first), with the delivery counters set
 * from the ledger's exact tally (a count lost to a crash is restored); the winner drops the
 * recipient pages and the content store's entry (every recipient has a final outcome, so
 * delivery needs it no more).
 */
export async function completeBroadcast(
  deps: Omit<OutcomeDeps, "timeline">,
  broadcast: Pick<Broadcast, "id" | "workspaceId"> & { abTest?: Pick<AbTest, "stats"> },
  recipients: number,
): Promise<void> {
  const broadcastId = broadcast.id;
  const exact = await deps.ledger.tally(broadcastId);
  // An A/B test's variant counts from the ledger too (a crash loses their counts as it does the others').
  const abExact = broadcast.abTest ? withEveryVariant(broadcast.abTest.stats, await deps.ledger.variantTally(broadcastId)) : undefined;
  if (!(await deps.broadcasts.complete(broadcastId, deps.clock.now(), exact, abExact))) return;
  deps.logger.info({ broadcastId, recipients }, "broadcast completed");
  // Only the CAS's winner gets here: BROADCAST_COMPLETED, with the counters just written.
  await publishCompleted(deps, broadcastId);
  await Promise.all([
    deps.pages.deleteAll(broadcastId).catch((err) => deps.logger.warn({ err, broadcastId }, "dropping recipient pages failed")),
    deps.deliveryContent
      ?.delete(broadcast.workspaceId, contentRefOf(broadcastId))
      .catch((err) => deps.logger.warn({ err, broadcastId }, "dropping the content store entry failed")),
    ...Object.keys(broadcast.abTest?.stats ?? {}).map((_, i) =>
      deps.deliveryContent
        ?.delete(broadcast.workspaceId, variantContentRefOf(broadcastId, i))
        .catch((err) => deps.logger.warn({ err, broadcastId }, "dropping a variant's content store entry failed")),
    ),
  ]);
}

/**
 * Publishes BROADCAST_COMPLETED for a broadcast whose COMPLETED status committed, then drops
 * the broadcast's unannounced mark (set by the CAS in the same write as the status). A failed
 * publish, or a process that stops between the CAS and here, leaves the mark: the announcer's
 * sweep (announceCompletions) publishes it later. The event id (`<broadcastId>.completed`)
 * makes a repeat harmless (the stream drops it, the webhooks unit keeps one delivery per
 * event and webhook). Never throws.
 */
async function publishCompleted(deps: Pick<OutcomeDeps, "broadcasts" | "logger" | "events">, broadcastId: string): Promise<void> {
  if (!deps.events) return;
  try {
    const completed = await deps.broadcasts.findById(broadcastId);
    if (completed) await announceCompleted(deps, completed);
  } catch (err) {
    deps.logger.warn({ err, broadcastId }, "BROADCAST_COMPLETED not published yet; the sweep retries");
  }
}

async function announceCompleted(deps: Pick<OutcomeDeps, "broadcasts" | "events">, broadcast: Broadcast): Promise<void> {
  await deps.events!.completed(broadcast);
  await deps.broadcasts.completionAnnounced(broadcast.id);
}

/**
 * The sweep: BROADCAST_COMPLETED for every COMPLETED broadcast still marked unannounced
 * (its publish failed, or its process stopped after the CAS). Answers how many went out;
 * a failure stops the pass (the next one retries).
 */
export async function announceCompletions(deps: Pick<OutcomeDeps, "broadcasts" | "logger" | "events">, limit = 100): Promise<number> {
  if (!deps.events) return 0;
  let announced = 0;
  for (const broadcast of await deps.broadcasts.unannouncedCompletions(limit)) {
    await announceCompleted(deps, broadcast);
    deps.logger.info({ broadcastId: broadcast.id }, "BROADCAST_COMPLETED published by the sweep");
    announced++;
  }
  return announced;
}

// What outcomes count (the planned curve is the sender's).
const TIMELINE_KINDS: Exclude<TimelineKind, "planned">[] = ["sent", "delivered", "opened", "clicked", "bounced"];

function timelineInc(inc: Partial<Progress>): Partial<Record<TimelineKind, number>> | undefined {
  const out: Partial<Record<TimelineKind, number>> = {};
  for (const k of TIMELINE_KINDS) if (inc[k]) out[k] = inc[k];
  return Object.keys(out).length ? out : undefined;
}
