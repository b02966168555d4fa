import { variablesJson, type PageRecipientSpec } from "@mailroom/pipeline/work.js";
import {
  PAGE_SIZE,
  REST_WAVE_OFFSET,
  abStatsKey,
  contentRefOf,
  variantContentKeyOf,
  variantContentRefOf,
  deliveryIdOf,
  messageIdOf,
  type Broadcast,
  type Progress,
  type Recipient,
  type RecipientPage,
  type SendingState,
  type WindowReservation,
} from "./model.js";
import { announceCompletions, completeBroadcast, finalTarget, withEveryVariant } from "./outcomes.js";
import { assignVariants, pickWinner } from "./abtest.js";
import { optimalDueAt, releaseDecision, smartDueAt, waveOf, warmupToday } from "./pacing.js";
import { sendingHold } from "./gating.js";
import type {
  AbCountsInc,
  BroadcastEvents,
  BroadcastRepository,
  Clock,
  Contact,
  ContentRepository,
  DeliveryContent,
  DeliveryLedger,
  DeliveryQueue,
  Directory,
  LedgerEntry,
  Logger,
  PageRepository,
  SendingStepScope,
  TimelineRepository,
  WarmupRepository,
} from "./ports.js";

export interface SenderDeps {
  broadcasts: BroadcastRepository;
  pages: PageRepository;
  ledger: DeliveryLedger;
  warmup: WarmupRepository;
  directory: Directory;
  queue: DeliveryQueue;
  /** The locked compiled content (as the renderer compiled it at schedule), by the broadcast's contentKey. */
  lockedContent: ContentRepository;
  /** The content store delivery reads from: written before any page is released. */
  deliveryContent: DeliveryContent;
  clock: Clock;
  logger: Logger;
  /** BROADCAST_STARTED / BROADCAST_COMPLETED (none when absent). */
  events?: BroadcastEvents;
  /** Wraps each step that sends (its trace, linked to the schedule request); default: none. */
  stepScope?: SendingStepScope;
  /** The progress chart's buckets: SMART and OPTIMAL add their planned curve (none when absent). */
  timeline?: TimelineRepository;
}

const unscoped: SendingStepScope = (_broadcast, step) => step();

export interface SenderOptions {
  /** Names this process in leases; unique per process. */
  owner: string;
  intervalMs?: number;
  leaseMs?: number;
  /** Recipients in one released window (one usage reservation, one publish burst). */
  windowSize?: number;
  /** Most recipients one broadcast gets per claim, so several broadcasts take turns. */
  maxPerClaim?: number;
  /** Pages resolved per claim (default: all; the lease is extended page by page). */
  pagesPerClaim?: number;
  /** How often a draining broadcast is checked for completion without an event. */
  drainCheckMs?: number;
  /** Broadcasts worked at once by this process. */
  concurrency?: number;
  /** How often COMPLETED broadcasts whose BROADCAST_COMPLETED did not go out are looked for (and at start). */
  announceEveryMs?: number;
}

const FAR_FUTURE = new Date(Date.UTC(9999, 0, 1));
/** How often a broadcast held by the workspace's paused (or banned) sending is looked at again. */
export const HOLD_RECHECK_MS = 5_000;
/**
 * Releasing that resumes this long after the content was last written to the content store
 * writes it again: the bucket drops entries 14 days after their last write, and a paced
 * broadcast (WARMUP) can release for longer than that. One write a day per broadcast at most,
 * none on the claims in between (a field compare, no read).
 */
export const CONTENT_REFRESH_MS = 24 * 3600_000;
/**
 * Most bytes of recipients in one page job: a window whose recipients carry large merge
 * values goes out as several pages, so no message nears NATS's 1 MB payload limit.
 */
export const MAX_PAGE_BYTES = 512 * 1024;
const EPOCH = new Date(0);
/**
 * How often a broadcast waiting for its A/B winner is looked at before its wait ends: a
 * user's choice is seen within this even when a worker's lease release moved the look back.
 */
export const AB_RECHECK_MS = 5_000;
/** Held pages of the rest made due per batch (the lease is extended batch by batch). */
const UNHOLD_BATCH = 20;

/**
 * The claim loop that moves broadcasts along, with every step a compare-and-set in the
 * store so it is restart-safe and several processes can run it:
 *
 * 1. a due SCHEDULED broadcast is claimed into IN_PROGRESS (the CAS a cancel races);
 * 2. its audience is resolved into recipient pages, resumable from a persisted cursor;
 * 3. windows of recipients are released to delivery as the pacing policy allows, each as
 *    one page job (after the compiled content is in the content store);
 * 4. once everything is released and every delivery has a final outcome it is COMPLETED.
 */
export class Sender {
  private readonly intervalMs: number;
  private readonly leaseMs: number;
  private readonly windowSize: number;
  private readonly maxPerClaim: number;
  private readonly pagesPerClaim: number;
  private readonly drainCheckMs: number;
  private readonly concurrency: number;
  private starter: Repeater | undefined;
  private workers: Repeater[] = [];
  private announcer: Repeater | undefined;
  private halted = false;

  constructor(
    private readonly deps: SenderDeps,
    private readonly opts: SenderOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? 250;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.windowSize = opts.windowSize ?? 500;
    this.maxPerClaim = opts.maxPerClaim ?? 5_000;
    this.pagesPerClaim = opts.pagesPerClaim ?? Number.POSITIVE_INFINITY;
    this.drainCheckMs = opts.drainCheckMs ?? 5_000;
    this.concurrency = opts.concurrency ?? 4;
  }

  /**
   * Moves every due SCHEDULED broadcast to IN_PROGRESS (the CAS a cancel races) and leaves
   * its work to whichever worker claims it next, so a start never waits behind another
   * broadcast's long step.
   */
  async startDue(): Promise<number> {
    let started = 0;
    while (started < 1_000 && !this.halted) {
      const broadcast = await this.deps.broadcasts.claimDue(this.deps.clock.now(), this.opts.owner, EPOCH, {
        phase: "resolving",
        pages: 0,
        workspaceTimezone: "",
        waveBounces: {},
      });
      if (!broadcast) break;
      this.deps.logger.info({ broadcastId: broadcast.id }, "broadcast started");
      started++;
    }
    if (started > 0) for (const worker of this.workers) worker.wake();
    return started;
  }

  /** Claims one IN_PROGRESS broadcast whose next step is due and runs that step; false when none is due. */
  async workOnce(): Promise<boolean> {
    const broadcast = await this.deps.broadcasts.claimWork(this.deps.clock.now(), this.opts.owner, this.leaseUntil());
    if (!broadcast) return false;
    let workAt: Date;
    try {
      // A draining broadcast's step only counts outcomes, every few seconds for as long as the
      // last deliveries take: not worth a trace each. The steps that send are.
      const scope = broadcast.sending?.phase === "draining" ? unscoped : (this.deps.stepScope ?? unscoped);
      workAt = await scope(broadcast, () => this.work(broadcast));
    } catch (err) {
      this.deps.logger.warn({ err, broadcastId: broadcast.id }, "broadcast step failed; will retry");
      workAt = new Date(this.deps.clock.now().getTime() + 2_000);
    }
    await this.deps.broadcasts.releaseLease(broadcast.id, this.opts.owner, workAt);
    return true;
  }

  /** One pass of everything (tests drive the loop with it): starts, due steps, then the unannounced completions. */
  async tick(): Promise<number> {
    let steps = await this.startDue();
    for (let i = 0; i < 100 && !this.halted && (await this.workOnce()); i++) steps++;
    steps += await announceCompletions(this.deps).catch((err) => {
      this.deps.logger.warn({ err }, "BROADCAST_COMPLETED sweep failed; the next one retries");
      return 0;
    });
    return steps;
  }

  /** Runs the claimed broadcast's next step; returns when to look at it again. */
  async work(broadcast: Broadcast): Promise<Date> {
    let sending = broadcast.sending!;
    if (sending.phase === "resolving") {
      const next = await this.resolve(broadcast, sending);
      if (!next) return new Date(0); // lease lost; whoever holds it carries on
      sending = next;
      if (sending.phase === "resolving") return this.deps.clock.now();
    }
    if (sending.phase === "releasing") {
      const { sending: after, workAt } = await this.release(broadcast, sending);
      if (after.phase === "releasing" || after.phase === "waiting") return workAt;
      sending = after;
    }
    if (sending.phase === "waiting") return this.awaitWinner(broadcast, sending);
    return this.drain(broadcast, sending);
  }

  // ---- 2. resolution ----------------------------------------------------------------------

  /**
   * Writes up to `pagesPerClaim` pages of recipients after the cursor: subscribed contacts
   * minus suppressions, as of now. Each page is written before the cursor moves past it,
   * so a restart rewrites at most the page in flight.
   */
  private async resolve(broadcast: Broadcast, sending: SendingState): Promise<SendingState | null> {
    const { directory, pages } = this.deps;
    // BROADCAST_STARTED: IN_PROGRESS was committed by the start claim. Published here, by the
    // first resolution step, so a failed publish (or a process that died after the claim)
    // fails the step, which is retried until it went out; repeats are deduplicated by its id.
    if (!sending.cursor && sending.pages === 0) await this.deps.events?.started(broadcast);
    let state = sending;
    if (!state.workspaceTimezone) {
      state = { ...state, workspaceTimezone: (await directory.workspace(broadcast.workspaceId)).timezone || "UTC" };
    }
    const startedAt = broadcast.sentAt ?? this.deps.clock.now();
    const scheduledAt = broadcast.scheduledAt ?? startedAt;
    let buffer: Contact[] = [];
    let written = 0;
    // A/B test: the split's seed is stored before the first page, so every page written (again,
    // after a restart) splits the audience the same way.
    const ab = broadcast.abTest;
    let seed = ab?.seed;
    if (ab && !seed) {
      // The broadcast's id: the split depends on nothing but the broadcast and its audience.
      seed = (await this.deps.broadcasts.startAbTest(broadcast.id, this.opts.owner, broadcast.id)) ?? undefined;
      if (!seed) return null;
    }

    const flush = async (contacts: Contact[]): Promise<boolean> => {
      const suppressed = await directory.suppressed(broadcast.workspaceId, contacts.map((c) => c.email));
      const kept = contacts.filter((c) => !suppressed.has(c.email.toLowerCase()));
      const dueAts = await this.dueTimes(broadcast, scheduledAt, startedAt.getTime(), state.workspaceTimezone, kept);
      const recipients = kept.map((c, i) => recipientOf(c, dueAts[i])).sort((a, b) => a.dueAt - b.dueAt);
      const seq = state.pages;
      const pageId = `${broadcast.id}:${String(seq).padStart(6, "0")}`;
      const abInc: AbCountsInc = {};
      let due = recipients;
      if (ab && seed) {
        // The test share goes out first; the rest waits in a held page of its own for the winner.
        const rest: Recipient[] = [];
        due = [];
        const assigned = assignVariants(seed, recipients.map((r) => r.contactId), resolvedBefore(broadcast, state), ab.testShare, ab.variants.length);
        for (const [i, r] of recipients.entries()) {
          const variant = assigned[i];
          if (variant === undefined) rest.push(r);
          else {
            due.push({ ...r, variant });
            const counts = (abInc[abStatsKey(variant)] ??= { recipients: 0 });
            counts.recipients! += 1;
          }
        }
        if (rest.length > 0) await pages.put({ id: `${pageId}r`, broadcastId: broadcast.id, seq, recipients: rest, released: 0, reservedUpTo: 0, held: true });
      }
      if (due.length > 0) {
        const page: RecipientPage = {
          id: pageId,
          broadcastId: broadcast.id,
          seq,
          recipients: due,
          released: 0,
          reservedUpTo: 0,
          nextDueAt: due[0].dueAt,
        };
        await pages.put(page);
      }
      const next: SendingState = {
        ...state,
        cursor: contacts[contacts.length - 1].id,
        pages: recipients.length > 0 ? seq + 1 : seq,
        resolved: resolvedBefore(broadcast, state) + recipients.length,
      };
      if (!(await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, next, { recipients: recipients.length }, this.leaseUntil(), abInc))) return false;
      state = next;
      written++;
      await this.addPlanned(broadcast, due);
      return true;
    };

    try {
      for await (const batch of directory.subscribedContacts(broadcast.workspaceId, broadcast.audience, state.cursor)) {
        buffer.push(...batch);
        while (buffer.length >= PAGE_SIZE) {
          if (!(await flush(buffer.slice(0, PAGE_SIZE)))) return null;
          buffer = buffer.slice(PAGE_SIZE);
          // Stop the stream here; the next claim resumes after the cursor.
          if (written >= this.pagesPerClaim) return state;
        }
      }
    } catch (err) {
      // The audience's segment or topic was deleted after scheduling (or its filter no longer
      // holds): no one else can be resolved, now or on a retry. What was written goes out.
      const code = (err as { code?: unknown })?.code;
      if (code !== "audience_not_found" && code !== "invalid_filter") throw err;
      this.deps.logger.warn({ err, broadcastId: broadcast.id }, "audience no longer resolves; sending to the recipients resolved so far");
      buffer = [];
    }
    if (buffer.length > 0 && !(await flush(buffer))) return null;
    const done: SendingState = { ...state, phase: "releasing" };
    if (!(await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, done))) return null;
    this.deps.logger.info({ broadcastId: broadcast.id, pages: done.pages }, "audience resolved");
    return done;
  }

  // ---- 3. release -------------------------------------------------------------------------

  private async release(broadcast: Broadcast, sending: SendingState): Promise<{ sending: SendingState; workAt: Date }> {
    const { pages, broadcasts } = this.deps;
    // An operator's pause or ban holds the broadcast where it is (nothing reserved, no warm-up
    // cap taken): looked at again every HOLD_RECHECK_MS, it carries on once sending resumes.
    const hold = sendingHold(await this.deps.directory.workspace(broadcast.workspaceId));
    if (hold) {
      this.deps.logger.debug({ broadcastId: broadcast.id, code: hold.code }, "broadcast held: workspace sending stopped by the operator");
      return { sending, workAt: new Date(this.deps.clock.now().getTime() + HOLD_RECHECK_MS) };
    }
    let released = 0;
    let sequence = broadcast.progress.released;
    let contentReady = false;
    // An A/B test's rest is paced like a broadcast of its own that started when the winner was chosen.
    const ab = broadcast.abTest;
    const rest = ab?.winner !== undefined;
    const origin = rest ? (ab!.winnerChosenAt ?? broadcast.sentAt) : broadcast.sentAt;
    const offset = rest ? (ab!.testReleased ?? 0) : 0;
    for (;;) {
      const now = this.deps.clock.now();
      const fresh = (await broadcasts.progressOf(broadcast.id)) ?? broadcast;
      const waveBounces = fresh.sending?.waveBounces ?? sending.waveBounces;
      sequence = Math.max(sequence, fresh.progress.released);
      const account = broadcast.deliveryMethod === "WARMUP" ? await this.deps.warmup.get(broadcast.workspaceId) : undefined;
      const decision = releaseDecision({
        method: broadcast.deliveryMethod ?? "ASAP",
        startedAt: origin ?? now,
        now,
        released: sequence - offset,
        waveBounces: ab ? wavesOfPart(waveBounces, rest) : waveBounces,
        warmupAccount: account,
      });
      if (decision.pause) {
        const paused = { ...sending, waveBounces, pauseReason: decision.pause };
        if (sending.pauseReason !== decision.pause) {
          this.deps.logger.warn({ broadcastId: broadcast.id, reason: decision.pause }, "broadcast paused");
          await broadcasts.saveSending(broadcast.id, this.opts.owner, paused);
        }
        // Stopped early (design §6): nothing more goes out, and the broadcast COMPLETES once
        // what was released has settled; the rest shows as recipients - released.
        return this.finishReleasing(broadcast, paused);
      }
      const page = await pages.nextDue(broadcast.id, now.getTime());
      if (!page) {
        const earliest = await pages.earliestDue(broadcast.id);
        if (earliest === null && ab && !rest) return this.enterWait(broadcast, sending, sequence);
        if (earliest === null) return this.finishReleasing(broadcast, sending);
        return { sending, workAt: new Date(earliest) };
      }
      const budget = Math.min(decision.allowed, this.windowSize, this.maxPerClaim - released);
      if (budget <= 0) {
        const workAt = released >= this.maxPerClaim ? now : (decision.nextAt ?? FAR_FUTURE);
        return { sending, workAt };
      }
      if (!contentReady) {
        const stored = await this.storeContent(broadcast, sending);
        if (!stored) return { sending, workAt: new Date(0) }; // lease lost; whoever holds it carries on
        sending = stored;
        contentReady = true;
      }
      const count = await this.releaseWindow(broadcast, page, budget, sequence, now, account);
      if (count === null) return { sending, workAt: new Date(0) }; // lost the race for this window
      if (count === 0) return { sending, workAt: decision.nextAt ?? new Date(now.getTime() + 1_000) };
      released += count;
      sequence += count;
    }
  }

  // ---- A/B test: the wait and the winner ---------------------------------------------------

  /**
   * The test share is released: the broadcast waits `waitFor` (counted from now, the release
   * of the test share's last window) for the winner, in the store, so a restart waits on.
   */
  private async enterWait(broadcast: Broadcast, sending: SendingState, released: number): Promise<{ sending: SendingState; workAt: Date }> {
    const now = this.deps.clock.now();
    const waitUntil = new Date(now.getTime() + broadcast.abTest!.waitForSeconds * 1000);
    const waiting: SendingState = { ...sending, phase: "waiting" };
    if (!(await this.deps.broadcasts.enterAbWait(broadcast.id, this.opts.owner, waiting, waitUntil, released))) return { sending, workAt: new Date(0) };
    this.deps.logger.info({ broadcastId: broadcast.id, waitUntil }, "A/B test share released; waiting for the winner");
    return { sending: waiting, workAt: new Date(Math.min(waitUntil.getTime(), now.getTime() + AB_RECHECK_MS)) };
  }

  /**
   * Waiting: once `waitUntil` has passed, the variant with the best unique rate (from the
   * ledger's exact counts) wins, unless a user chose first (both a CAS on "no winner yet").
   * Decided: the rest's held pages become due (SMART: at the choice's wall-clock time in each
   * contact's zone; OPTIMAL: at each contact's best hour within 24 h of the choice) and
   * releasing resumes with the winner. Each step is safe to run again.
   */
  private async awaitWinner(broadcast: Broadcast, sending: SendingState): Promise<Date> {
    const ab = broadcast.abTest;
    const now = this.deps.clock.now();
    if (!ab) return this.drain(broadcast, { ...sending, phase: "draining" });
    if (ab.winner === undefined) {
      if (ab.state !== "waiting") return new Date(now.getTime() + AB_RECHECK_MS);
      const waitUntil = ab.waitUntil ? new Date(ab.waitUntil).getTime() : now.getTime();
      if (now.getTime() < waitUntil) return new Date(Math.min(waitUntil, now.getTime() + AB_RECHECK_MS));
      const stats = withEveryVariant(ab.stats, await this.deps.ledger.variantTally(broadcast.id));
      const winner = pickWinner(stats, ab.variants.length, ab.metric);
      if (await this.deps.broadcasts.chooseAbWinner(broadcast.id, { winner, by: "metric", at: now, stats })) {
        this.deps.logger.info({ broadcastId: broadcast.id, winner, metric: ab.metric }, "A/B winner chosen by its rate");
      }
      return now; // the next claim reads the choice (this one, a user's, or a cancel)
    }
    const chosenAt = new Date(ab.winnerChosenAt ?? now).getTime();
    for (;;) {
      const held = await this.deps.pages.held(broadcast.id, UNHOLD_BATCH);
      if (held.length === 0) break;
      for (const page of held) {
        const dueAts = await this.dueTimes(broadcast, new Date(chosenAt), chosenAt, sending.workspaceTimezone, page.recipients.map((r) => ({ id: r.contactId, timezone: r.timezone })));
        const recipients = page.recipients.map((r, i) => ({ ...r, dueAt: dueAts[i] })).sort((a, b) => a.dueAt - b.dueAt);
        await this.deps.pages.unhold(page.id, recipients, recipients[0].dueAt);
        await this.addPlanned(broadcast, recipients);
      }
      if (!(await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, sending, {}, this.leaseUntil()))) return new Date(0);
    }
    const releasing: SendingState = { ...sending, phase: "releasing" };
    if (!(await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, releasing))) return new Date(0);
    this.deps.logger.info({ broadcastId: broadcast.id, winner: ab.winner }, "A/B winner goes to the rest");
    return now;
  }

  /**
   * When each contact may be released (epoch ms, in their order): SMART and OPTIMAL spread them
   * over the 24 hours after `sendAt` (the wall-clock time of sendAt in each zone; each contact's
   * best hour, planned by the audience unit from its engagement, else as SMART), the others go from
   * `startedAt`.
   */
  private async dueTimes(broadcast: Broadcast, sendAt: Date, startedAt: number, workspaceTimezone: string, contacts: { id: string; timezone: string }[]): Promise<number[]> {
    if (broadcast.deliveryMethod === "SMART") return contacts.map((c) => smartDueAt(sendAt, workspaceTimezone, c.timezone).getTime());
    if (broadcast.deliveryMethod !== "OPTIMAL" || contacts.length === 0) return contacts.map(() => startedAt);
    const planned = await this.deps.directory.bestHours(broadcast.workspaceId, sendAt, workspaceTimezone, contacts);
    return contacts.map((c, i) => optimalDueAt(planned[i], sendAt, workspaceTimezone, c.timezone).getTime());
  }

  /**
   * SMART and OPTIMAL: the recipients' due times, counted per minute in the timeline (the
   * progress chart's planned curve beside the sent one). After the page's step committed: a
   * process that dies between the two leaves those recipients out of the curve, never twice in.
   */
  private async addPlanned(broadcast: Broadcast, recipients: Recipient[]): Promise<void> {
    const timeline = this.deps.timeline;
    if (!timeline || (broadcast.deliveryMethod !== "SMART" && broadcast.deliveryMethod !== "OPTIMAL") || recipients.length === 0) return;
    const perMinute = new Map<number, number>();
    for (const r of recipients) {
      const minute = Math.floor(r.dueAt / 60_000) * 60_000;
      perMinute.set(minute, (perMinute.get(minute) ?? 0) + 1);
    }
    try {
      for (const [minute, planned] of perMinute) await timeline.add(broadcast.id, new Date(minute), { planned });
    } catch (err) {
      this.deps.logger.warn({ err, broadcastId: broadcast.id }, "planned curve not recorded for a page");
    }
  }

  /**
   * Writes the broadcast's compiled content (kept as the renderer's bytes since schedule) to
   * the content store under `broadcast:<id>` (an A/B test: each variant's under
   * `broadcast:<id>-v<i>`), unless it was written less than a day ago. Null when the lease
   * was lost.
   */
  private async storeContent(broadcast: Broadcast, sending: SendingState): Promise<SendingState | null> {
    const now = this.deps.clock.now().getTime();
    if (sending.contentStoredAt !== undefined && now - sending.contentStoredAt < CONTENT_REFRESH_MS) return sending;
    const refs = broadcast.abTest
      ? broadcast.abTest.variants.map((_, i) => ({ key: broadcast.contentKey && variantContentKeyOf(broadcast.contentKey, i), ref: variantContentRefOf(broadcast.id, i) }))
      : [{ key: broadcast.contentKey, ref: contentRefOf(broadcast.id) }];
    for (const { key, ref } of refs) {
      const locked = key ? await this.deps.lockedContent.get(key) : null;
      if (!locked) throw new Error(`broadcast ${broadcast.id} has no locked content for ${ref}`);
      await this.deps.deliveryContent.put(broadcast.workspaceId, ref, locked.compiled);
    }
    const next: SendingState = { ...sending, contentStoredAt: now };
    if (!(await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, next))) return null;
    return next;
  }

  /**
   * Releases up to `budget` due recipients of a page: reserve (suppression check and usage,
   * recorded on the page), ledger entries, publish (one page job), mark released. A window
   * already reserved by a process that died is published again without a second
   * reservation, under the same page id, which the stream deduplicates.
   */
  private async releaseWindow(
    broadcast: Broadcast,
    page: RecipientPage,
    budget: number,
    sequence: number,
    now: Date,
    account: Parameters<typeof warmupToday>[0],
  ): Promise<number | null> {
    const { pages, directory } = this.deps;
    let end = page.reservedUpTo;
    let reservation = page.reservation;
    if (!(end > page.released && reservation)) {
      end = page.released;
      while (end < page.recipients.length && end - page.released < budget && page.recipients[end].dueAt <= now.getTime()) end++;
      if (end === page.released) return 0;
      if (broadcast.deliveryMethod === "WARMUP") {
        const today = warmupToday(account, now);
        // Another broadcast of the account took from today's cap first: look again at once.
        if (!(await this.deps.warmup.take(broadcast.workspaceId, account, today, end - page.released))) return null;
      }
      const window = page.recipients.slice(page.released, end);
      const usage = await directory.reserveSendable(broadcast.workspaceId, window.map((r) => r.email));
      reservation = { granted: usage.granted, suppressed: usage.suppressed, period: usage.period, firstSequence: sequence };
      if (!(await pages.reserve(page.id, page.released, end, reservation))) {
        // Someone else reserved this window first: give back what this reservation counted.
        if (usage.reserved > 0) await directory.releaseUsage(broadcast.workspaceId, usage.reserved, usage.period).catch(() => undefined);
        return null;
      }
      if (!usage.granted) this.deps.logger.warn({ broadcastId: broadcast.id, count: window.length }, "monthly limit reached; window failed");
    }
    const window = page.recipients.slice(page.released, end);
    // The window's bounds name its page job: the same window re-published is the same message.
    const settled = await this.publishWindow(broadcast, `${page.id}:${page.released}-${end}`, window, reservation, now);
    const nextDueAt = end < page.recipients.length ? page.recipients[end].dueAt : undefined;
    if (!(await pages.markReleased(page.id, page.released, nextDueAt))) return null;
    await this.deps.broadcasts.increment(broadcast.id, { released: window.length, ...settled });
    return window.length;
  }

  /**
   * One ledger write for the window, then the recipients to send as one page job (several
   * when their merge values are large), published at once.
   */
  private async publishWindow(broadcast: Broadcast, windowId: string, window: Recipient[], reservation: WindowReservation, now: Date): Promise<Partial<Progress>> {
    const suppressed = new Set(reservation.suppressed);
    const ab = broadcast.abTest;
    const rest = ab?.winner !== undefined;
    // The rest's PROGRESSIVE waves are its own (counted from its first recipient, keyed apart).
    const waveAt = (i: number) => (rest ? REST_WAVE_OFFSET + waveOf(reservation.firstSequence - (ab!.testReleased ?? 0) + i) : waveOf(reservation.firstSequence + i));
    const entries: LedgerEntry[] = window.map((r, i) => {
      const settled = !reservation.granted ? "failed" : suppressed.has(r.email.toLowerCase()) ? "suppressed" : undefined;
      const entry: LedgerEntry = { deliveryId: deliveryIdOf(broadcast.id, r.contactId), broadcastId: broadcast.id, wave: waveAt(i), settled };
      if (r.variant !== undefined) entry.variant = r.variant;
      return entry;
    });
    await this.deps.ledger.add(entries);
    // One group per variant (an A/B test's test share mixes them; the rest all get the winner).
    const groups = new Map<number | undefined, PageRecipientSpec[]>();
    window.forEach((r, i) => {
      if (entries[i].settled) return;
      const variant = ab ? (r.variant ?? ab.winner) : undefined;
      if (ab && variant === undefined) throw new Error(`broadcast ${broadcast.id}: a recipient of the rest released before the winner`);
      const group = groups.get(variant) ?? [];
      group.push({
        deliveryId: deliveryIdOf(broadcast.id, r.contactId),
        messageId: messageIdOf(broadcast.id, r.contactId, broadcast.fromEmail),
        email: r.email,
        contactId: r.contactId,
        variablesJson: variablesJson({ ...r.properties, firstName: r.firstName, lastName: r.lastName }),
      });
      groups.set(variant, group);
    });
    const publishes: Promise<void>[] = [];
    for (const [variant, recipients] of groups) {
      const chunks = chunkBySize(recipients, MAX_PAGE_BYTES);
      // Page ids stay a function of the window (and the variant), so a window published again is the same message.
      const groupId = variant === undefined ? windowId : `${windowId}/v${variant}`;
      const shared = {
        workspaceId: broadcast.workspaceId,
        broadcastId: broadcast.id,
        contentRef: variant === undefined ? contentRefOf(broadcast.id) : variantContentRefOf(broadcast.id, variant),
        fromEmail: broadcast.fromEmail,
        fromName: variant === undefined ? broadcast.fromName : (ab!.variants[variant]?.fromName ?? broadcast.fromName),
        replyTo: broadcast.replyTo,
        subjectPrefix: "",
        enqueuedAt: now,
      };
      for (const [k, chunk] of chunks.entries()) {
        publishes.push(this.deps.queue.publishPage({ ...shared, pageId: chunks.length === 1 ? groupId : `${groupId}/${k}`, recipients: chunk }));
      }
    }
    await Promise.all(publishes);
    const failed = entries.filter((e) => e.settled === "failed").length;
    const suppressedCount = entries.filter((e) => e.settled === "suppressed").length;
    return { failed, suppressed: suppressedCount, finalized: failed + suppressedCount };
  }

  private async finishReleasing(broadcast: Broadcast, sending: SendingState) {
    const draining: SendingState = { ...sending, phase: "draining" };
    await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, draining);
    return { sending: draining, workAt: this.deps.clock.now() };
  }

  // ---- 4. completion ----------------------------------------------------------------------

  /**
   * COMPLETED once every recipient has a final outcome. The outcome consumer completes the
   * broadcast itself when its counter reaches the target; this check is the safety net for
   * counts a crash lost between the ledger and the counter, so the ledger (a scan of every
   * recipient's entry) is only counted when the counter has not moved since the last check.
   */
  private async drain(broadcast: Broadcast, sending: SendingState): Promise<Date> {
    const fresh = (await this.deps.broadcasts.progressOf(broadcast.id)) ?? broadcast;
    const counted = fresh.progress.finalized;
    const next = new Date(this.deps.clock.now().getTime() + this.drainCheckMs);
    if (counted < finalTarget(fresh) && counted !== sending.finalizedAtCheck) {
      // Kept with the sending state, so a check by another process (or after a restart) sees it.
      await this.deps.broadcasts.saveSending(broadcast.id, this.opts.owner, { ...sending, finalizedAtCheck: counted });
      return next;
    }
    const finals = await this.deps.ledger.countFinal(broadcast.id);
    if (finals >= finalTarget(fresh)) {
      await completeBroadcast({ ...this.deps }, broadcast, fresh.progress.recipients);
      return FAR_FUTURE;
    }
    return new Date(this.deps.clock.now().getTime() + this.drainCheckMs);
  }

  // ---- loop ---------------------------------------------------------------------------------

  private leaseUntil(): Date {
    return new Date(this.deps.clock.now().getTime() + this.leaseMs);
  }

  /** Looks again at once (after a schedule without a future sendAt). */
  wake(): void {
    this.starter?.wake();
  }

  /** One starter and `concurrency` workers, each repeating its step (at once while busy). */
  start(): void {
    this.halted = false;
    const onError = (err: unknown) => this.deps.logger.error({ err }, "sender step failed");
    this.starter = new Repeater(async () => (await this.startDue(), false), this.intervalMs, onError);
    this.workers = Array.from({ length: this.concurrency }, () => new Repeater(() => this.workOnce(), this.intervalMs, onError));
    // BROADCAST_COMPLETED left unpublished by a process stopped after the COMPLETED CAS.
    this.announcer = new Repeater(async () => (await announceCompletions(this.deps), false), this.opts.announceEveryMs ?? 5_000, onError);
    this.starter.start();
    for (const worker of this.workers) worker.start();
    this.announcer.start();
  }

  async stop(): Promise<void> {
    this.halted = true;
    await Promise.all([this.starter?.stop(), this.announcer?.stop(), ...this.workers.map((w) => w.stop())]);
  }
}

/** Runs `step` again and again: at once after a busy step or a wake, else after `intervalMs`. */
class Repeater {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private halted = true;

  constructor(
    private readonly step: () => Promise<boolean>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.halted = false;
    this.schedule(0);
  }

  wake(): void {
    if (this.halted) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.halted = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms);
  }

  private run(): void {
    if (this.halted) return;
    this.running = this.step()
      .catch((err) => {
        this.onError(err);
        return false;
      })
      .then((busy) => {
        this.running = undefined;
        if (this.halted) return;
        const soon = busy || this.again;
        this.again = false;
        this.schedule(soon ? 0 : this.intervalMs);
      });
  }
}

/**
 * Recipients resolved into pages before the next one. A resolution begun before `resolved` was
 * saved counts from the progress, which the same writes as the cursor incremented.
 */
function resolvedBefore(broadcast: Broadcast, state: SendingState): number {
  return state.resolved ?? (state.cursor ? broadcast.progress.recipients : 0);
}

function recipientOf(c: Contact, dueAt: number): Recipient {
  return {
    contactId: c.id,
    email: c.email,
    firstName: c.firstName,
    lastName: c.lastName,
    timezone: c.timezone,
    properties: c.properties,
    dueAt,
  };
}

/**
 * Splits recipients into runs of at most `maxBytes` (estimated from their strings and merge
 * values; a recipient larger than that alone is a run of its own). Deterministic: the same
 * window always splits the same way, so re-published pages keep their ids.
 */
export function chunkBySize(recipients: PageRecipientSpec[], maxBytes: number): PageRecipientSpec[][] {
  const chunks: PageRecipientSpec[][] = [];
  let current: PageRecipientSpec[] = [];
  let bytes = 0;
  for (const r of recipients) {
    const size = 32 + r.deliveryId.length + r.messageId.length + r.email.length * 3 + r.contactId.length + r.variablesJson.length;
    if (current.length > 0 && bytes + size > maxBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * The PROGRESSIVE wave bounces of one part of an A/B test: the test share's waves (below
 * REST_WAVE_OFFSET), or the rest's (from it, renumbered from 0).
 */
export function wavesOfPart(waveBounces: Record<string, number>, rest: boolean): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(waveBounces)) {
    const k = Number(key.slice(1));
    if (rest && k >= REST_WAVE_OFFSET) out[`w${k - REST_WAVE_OFFSET}`] = n;
    if (!rest && k < REST_WAVE_OFFSET) out[key] = n;
  }
  return out;
}
