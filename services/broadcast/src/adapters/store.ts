import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import {
  FINAL_OUTCOMES,
  abStatsKey,
  emptyAbCounts,
  type AbTest,
  type AbVariant,
  type AbVariantCounts,
  type Broadcast,
  type OutcomeKind,
  type Progress,
  type Recipient,
  type RecipientPage,
  type SendingState,
  type WindowReservation,
} from "../domain/model.js";
import { waveKey, type WarmupAccount } from "../domain/pacing.js";
import type {
  BroadcastRepository,
  ContentRepository,
  DeliveryLedger,
  LedgerEntry,
  ListQuery,
  MarkResult,
  PageRepository,
  DraftFields,
  TimelineKind,
  TimelinePoint,
  TimelineRepository,
  WarmupRepository,
  DeliveryTally,
  AbCountsInc,
  BroadcastProgressView,
} from "../domain/ports.js";

/**
 * The broadcast service's collections, with the queries and the indexes that serve them:
 *
 * - `broadcasts`: one document per broadcast, with its sending state, lease and counters;
 * - `broadcast_contents`: compiled messages (locked content; test sends, expiring);
 * - `broadcast_pages`: the audience snapshot, pages of up to 1000 recipients (the outbox);
 * - `broadcast_deliveries`: one entry per released delivery, each outcome kind once;
 * - `warmup_accounts`: per-workspace WARMUP day and count;
 * - `broadcast_timeline`: per-minute counts of outcomes (the console's chart).
 */

type BroadcastDoc = Omit<Broadcast, "id" | "abTest"> & {
  _id: string;
  /**
   * An A/B test's state and counts, without its variants (kept in `abVariants`), so the
   * progress read pacing and completion make often never carries their HTML.
   */
  abTest?: Omit<AbTest, "variants">;
  abVariants?: AbVariant[];
  /** When the sender loop should look at it next (IN_PROGRESS only). */
  workAt?: Date;
  leaseOwner?: string;
  leaseUntil?: Date;
  /**
   * Set by the COMPLETED CAS in the same write, removed once BROADCAST_COMPLETED went out:
   * a process that dies between the two leaves it for the announcer's sweep.
   */
  completedEventPending?: true;
};

const EPOCH = new Date(0);

function toBroadcast(doc: BroadcastDoc): Broadcast {
  const { _id, workAt: _w, leaseOwner: _o, leaseUntil: _u, completedEventPending: _p, abTest, abVariants, ...rest } = doc;
  const b: Broadcast = { id: _id, ...rest, replyTo: rest.replyTo ?? [] };
  if (abTest) b.abTest = { ...abTest, variants: abVariants ?? [] };
  return b;
}

/** A domain A/B test as stored: its variants beside it. */
function abFields(ab: AbTest | undefined): Pick<BroadcastDoc, "abTest" | "abVariants"> {
  if (!ab) return {};
  const { variants, ...state } = ab;
  return { abTest: state, abVariants: variants };
}

/** `$inc` paths of A/B variants' counts. */
function abIncPaths(abInc: AbCountsInc | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, counts] of Object.entries(abInc ?? {})) {
    for (const [field, n] of Object.entries(counts)) if (n) out[`abTest.stats.${key}.${field}`] = n;
  }
  return out;
}

export class BroadcastStore implements BroadcastRepository {
  private readonly docs: Collection<BroadcastDoc>;

  constructor(store: Store) {
    this.docs = store.collection<BroadcastDoc>("broadcasts");
  }

  async init(): Promise<void> {
    // Listing: a workspace's broadcasts newest first (ids are time-ordered ULIDs).
    await this.docs.createIndex({ keys: { workspaceId: 1, _id: -1 } });
    // The sender loop: due SCHEDULED broadcasts, and IN_PROGRESS ones whose work is due
    // (workAt exists only while IN_PROGRESS, so the index holds just those).
    await this.docs.createIndex({ keys: { status: 1, scheduledAt: 1 } });
    await this.docs.createIndex({ keys: { workAt: 1 }, sparse: true });
    // Completed broadcasts whose BROADCAST_COMPLETED is not out yet (the sweep's query).
    await this.docs.createIndex({ keys: { completedEventPending: 1 }, sparse: true });
  }

  async insert(b: Broadcast): Promise<void> {
    const { id, abTest, ...rest } = b;
    await this.docs.insertOne({ _id: id, ...rest, ...abFields(abTest) });
  }

  async find(workspaceId: string, id: string): Promise<Broadcast | null> {
    const doc = await this.docs.findOne({ _id: id, workspaceId });
    return doc ? toBroadcast(doc) : null;
  }

  async findById(id: string): Promise<Broadcast | null> {
    const doc = await this.docs.findOne({ _id: id });
    return doc ? toBroadcast(doc) : null;
  }

  async list(workspaceId: string, q: ListQuery): Promise<Broadcast[]> {
    const filter: Record<string, unknown> = { workspaceId };
    if (q.status) filter.status = q.status;
    if (q.before) filter._id = { $lt: q.before };
    const docs = await this.docs.find(filter, { sort: { _id: -1 }, limit: q.limit });
    return docs.map(toBroadcast);
  }

  async schedule(workspaceId: string, id: string, set: { scheduledAt: Date; deliveryMethod: Broadcast["deliveryMethod"]; contentKey: string; at: Date; traceparent?: string }): Promise<Broadcast | null> {
    const $set: Record<string, unknown> = { status: "SCHEDULED", scheduledAt: set.scheduledAt, deliveryMethod: set.deliveryMethod, contentKey: set.contentKey, updatedAt: set.at };
    // Only while tracing is on (a schedule cancelled before has its own removed by cancel()).
    if (set.traceparent) $set.traceparent = set.traceparent;
    const doc = await this.docs.findOneAndUpdate(
      { _id: id, workspaceId, status: "DRAFT" },
      { $set },
      { returnDocument: "after" },
    );
    return doc ? toBroadcast(doc) : null;
  }

  async updateDraft(workspaceId: string, id: string, fields: DraftFields, at: Date): Promise<Broadcast | null> {
    const { abTest, ...rest } = fields;
    const update = abTest
      ? { $set: { ...rest, ...abFields(abTest), updatedAt: at } }
      : { $set: { ...rest, updatedAt: at }, $unset: { abTest: "", abVariants: "" } };
    const doc = await this.docs.findOneAndUpdate({ _id: id, workspaceId, status: "DRAFT" }, update, { returnDocument: "after" });
    return doc ? toBroadcast(doc) : null;
  }

  async cancel(workspaceId: string, id: string, at: Date): Promise<Broadcast | null> {
    // Status SCHEDULED is the whole condition: the start claim moves it to IN_PROGRESS.
    const doc = await this.docs.findOneAndUpdate(
      { _id: id, workspaceId, status: "SCHEDULED" },
      { $set: { status: "DRAFT", updatedAt: at }, $unset: { scheduledAt: "", deliveryMethod: "", contentKey: "", traceparent: "" } },
      { returnDocument: "before" },
    );
    return doc ? toBroadcast(doc) : null;
  }

  async claimDue(now: Date, owner: string, leaseUntil: Date, initial: SendingState): Promise<Broadcast | null> {
    const doc = await this.docs.findOneAndUpdate(
      { status: "SCHEDULED", scheduledAt: { $lte: now } },
      { $set: { status: "IN_PROGRESS", sentAt: now, updatedAt: now, sending: initial, workAt: now, leaseOwner: owner, leaseUntil } },
      { sort: { scheduledAt: 1 }, returnDocument: "after" },
    );
    return doc ? toBroadcast(doc) : null;
  }

  async claimWork(now: Date, owner: string, leaseUntil: Date): Promise<Broadcast | null> {
    const doc = await this.docs.findOneAndUpdate(
      { workAt: { $lte: now }, status: "IN_PROGRESS", leaseUntil: { $lt: now } },
      { $set: { leaseOwner: owner, leaseUntil } },
      { sort: { workAt: 1 }, returnDocument: "after" },
    );
    return doc ? toBroadcast(doc) : null;
  }

  async saveSending(id: string, owner: string, sending: SendingState, inc: Partial<Progress> = {}, leaseUntil?: Date, abInc?: AbCountsInc): Promise<boolean> {
    // waveBounces are counted by the events consumer: never overwrite them from here.
    const { waveBounces: _ignored, ...rest } = sending;
    const set: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(rest)) if (v !== undefined) set[`sending.${k}`] = v;
    if (leaseUntil) set.leaseUntil = leaseUntil;
    const $inc = { ...progressInc(inc), ...abIncPaths(abInc) };
    const res = await this.docs.updateOne({ _id: id, leaseOwner: owner }, { $set: set, ...(Object.keys($inc).length ? { $inc } : {}) });
    return res.matchedCount === 1;
  }

  async releaseLease(id: string, owner: string, workAt: Date): Promise<void> {
    await this.docs.updateOne({ _id: id, leaseOwner: owner, status: "IN_PROGRESS" }, { $set: { leaseUntil: EPOCH, workAt } });
  }

  async increment(id: string, inc: Partial<Progress>, waveBounce?: number, abInc?: AbCountsInc): Promise<void> {
    const $inc = { ...progressInc(inc), ...abIncPaths(abInc) };
    // The wave's bounce count grows by the bounces this increment counts (one, or a batch's).
    if (waveBounce !== undefined) $inc[`sending.waveBounces.${waveKey(waveBounce)}`] = inc.bounced ?? 1;
    if (Object.keys($inc).length) await this.docs.updateOne({ _id: id }, { $inc });
  }

  async progressOf(id: string): Promise<BroadcastProgressView | null> {
    const doc = await this.docs.findOne({ _id: id }, { projection: { workspaceId: 1, status: 1, progress: 1, sending: 1, abTest: 1 } });
    if (!doc) return null;
    const view: BroadcastProgressView = { id: doc._id, workspaceId: doc.workspaceId, status: doc.status, progress: doc.progress, sending: doc.sending };
    if (doc.abTest) view.abTest = doc.abTest;
    return view;
  }

  async complete(id: string, at: Date, exact: Partial<Progress> = {}, abExact?: Record<string, AbVariantCounts>): Promise<boolean> {
    const counters: Record<string, unknown> = Object.fromEntries(Object.entries(exact).map(([k, v]) => [`progress.${k}`, v]));
    if (abExact) counters["abTest.stats"] = abExact;
    const res = await this.docs.updateOne(
      { _id: id, status: "IN_PROGRESS", "sending.phase": "draining" },
      { $set: { status: "COMPLETED", completedAt: at, updatedAt: at, completedEventPending: true, ...counters }, $unset: { workAt: "", leaseOwner: "", leaseUntil: "" } },
    );
    return res.matchedCount === 1;
  }

  async startAbTest(id: string, owner: string, seed: string): Promise<string | null> {
    await this.docs.updateOne(
      { _id: id, leaseOwner: owner, abTest: { $exists: true }, "abTest.seed": { $exists: false } },
      { $set: { "abTest.seed": seed, "abTest.state": "testing" } },
    );
    const doc = await this.docs.findOne({ _id: id, leaseOwner: owner }, { projection: { abTest: 1 } });
    return doc?.abTest?.seed ?? null;
  }

  async enterAbWait(id: string, owner: string, sending: SendingState, waitUntil: Date, testReleased: number): Promise<boolean> {
    const res = await this.docs.updateOne(
      { _id: id, leaseOwner: owner, status: "IN_PROGRESS", "abTest.state": "testing" },
      { $set: { "sending.phase": sending.phase, "abTest.state": "waiting", "abTest.waitUntil": waitUntil, "abTest.testReleased": testReleased } },
    );
    return res.matchedCount === 1;
  }

  async chooseAbWinner(id: string, choice: { workspaceId?: string; winner: number; by: "metric" | "user"; at: Date; stats?: Record<string, AbVariantCounts>; traceparent?: string }): Promise<boolean> {
    const filter: Record<string, unknown> = { _id: id, status: "IN_PROGRESS", "abTest.state": "waiting", "abTest.winner": { $exists: false } };
    if (choice.workspaceId) filter.workspaceId = choice.workspaceId;
    const set: Record<string, unknown> = {
      "abTest.state": "decided",
      "abTest.winner": choice.winner,
      "abTest.winnerChosenBy": choice.by,
      "abTest.winnerChosenAt": choice.at,
      updatedAt: choice.at,
      // The loop looks at it at once (a user's choice does not wait for waitUntil).
      workAt: choice.at,
    };
    if (choice.stats) set["abTest.stats"] = choice.stats;
    if (choice.traceparent) set["abTest.winnerTraceparent"] = choice.traceparent;
    const res = await this.docs.updateOne(filter, { $set: set });
    return res.matchedCount === 1;
  }

  async cancelAbWait(workspaceId: string, id: string, at: Date, pauseReason: string): Promise<boolean> {
    const res = await this.docs.updateOne(
      { _id: id, workspaceId, status: "IN_PROGRESS", "abTest.state": "waiting", "abTest.winner": { $exists: false } },
      { $set: { "abTest.state": "cancelled", "sending.phase": "draining", "sending.pauseReason": pauseReason, updatedAt: at, workAt: at } },
    );
    return res.matchedCount === 1;
  }

  async unannouncedCompletions(limit: number): Promise<Broadcast[]> {
    const docs = await this.docs.find({ completedEventPending: true }, { limit });
    return docs.map(toBroadcast);
  }

  async completionAnnounced(id: string): Promise<void> {
    await this.docs.updateOne({ _id: id, completedEventPending: true }, { $unset: { completedEventPending: "" } });
  }
}

function progressInc(inc: Partial<Progress>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(inc)) if (v) out[`progress.${k}`] = v;
  return out;
}

type ContentDoc = { _id: string; workspaceId: string; compiled: string; expiresAt?: Date };

export class LockedContentStore implements ContentRepository {
  private readonly docs: Collection<ContentDoc>;

  constructor(store: Store) {
    this.docs = store.collection<ContentDoc>("broadcast_contents");
  }

  async init(): Promise<void> {
    // Test contents carry expiresAt; locked contents do not and stay.
    await this.docs.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 0, sparse: true });
  }

  async put(key: string, workspaceId: string, compiled: Uint8Array, expiresAt?: Date): Promise<void> {
    const fields: Omit<ContentDoc, "_id"> = { workspaceId, compiled: Buffer.from(compiled).toString("base64") };
    if (expiresAt) fields.expiresAt = expiresAt;
    await this.docs.updateOne({ _id: key }, { $set: fields }, { upsert: true });
  }

  async get(key: string): Promise<{ workspaceId: string; compiled: Uint8Array } | null> {
    const doc = await this.docs.findOne({ _id: key });
    return doc ? { workspaceId: doc.workspaceId, compiled: new Uint8Array(Buffer.from(doc.compiled, "base64")) } : null;
  }

  async delete(key: string): Promise<void> {
    await this.docs.deleteOne({ _id: key });
  }
}

type PageDoc = Omit<RecipientPage, "id"> & { _id: string };

const toPage = ({ _id, ...rest }: PageDoc): RecipientPage => ({ id: _id, ...rest });

export class PageStore implements PageRepository {
  private readonly docs: Collection<PageDoc>;

  constructor(store: Store) {
    this.docs = store.collection<PageDoc>("broadcast_pages");
  }

  async init(): Promise<void> {
    // Unfinished pages of a broadcast by due time; finished pages drop nextDueAt.
    await this.docs.createIndex({ keys: { broadcastId: 1, nextDueAt: 1, seq: 1 } });
  }

  async put(page: RecipientPage): Promise<void> {
    const { id, ...rest } = page;
    await this.docs.updateOne({ _id: id }, { $set: rest }, { upsert: true });
  }

  async nextDue(broadcastId: string, now: number): Promise<RecipientPage | null> {
    const doc = await this.docs.findOne({ broadcastId, nextDueAt: { $lte: now } }, { sort: { nextDueAt: 1, seq: 1 } });
    return doc ? toPage(doc) : null;
  }

  async earliestDue(broadcastId: string): Promise<number | null> {
    const doc = await this.docs.findOne({ broadcastId, nextDueAt: { $exists: true } }, { sort: { nextDueAt: 1 }, projection: { nextDueAt: 1 } });
    return doc?.nextDueAt ?? null;
  }

  async reserve(pageId: string, released: number, reservedUpTo: number, reservation: WindowReservation): Promise<boolean> {
    const res = await this.docs.updateOne({ _id: pageId, released, reservedUpTo: { $lte: released } }, { $set: { reservedUpTo, reservation } });
    return res.matchedCount === 1;
  }

  async markReleased(pageId: string, released: number, nextDueAt: number | undefined): Promise<boolean> {
    const doc = await this.docs.findOne({ _id: pageId, released });
    if (!doc) return false;
    const update = nextDueAt === undefined
      ? { $set: { released: doc.reservedUpTo }, $unset: { nextDueAt: "", reservation: "" } }
      : { $set: { released: doc.reservedUpTo, nextDueAt }, $unset: { reservation: "" } };
    const res = await this.docs.updateOne({ _id: pageId, released, reservedUpTo: doc.reservedUpTo }, update);
    return res.matchedCount === 1;
  }

  async deleteAll(broadcastId: string): Promise<void> {
    await this.docs.deleteMany({ broadcastId });
  }

  async held(broadcastId: string, limit: number): Promise<RecipientPage[]> {
    const docs = await this.docs.find({ broadcastId, held: true }, { sort: { seq: 1 }, limit });
    return docs.map(toPage);
  }

  async unhold(pageId: string, recipients: Recipient[], nextDueAt: number): Promise<boolean> {
    const res = await this.docs.updateOne({ _id: pageId, held: true }, { $set: { recipients, nextDueAt }, $unset: { held: "" } });
    return res.matchedCount === 1;
  }
}

type LedgerDoc = { _id: string; broadcastId: string; wave: number; final?: boolean; variant?: number } & Partial<Record<OutcomeKind, boolean>>;

/** Ledger entries read per page when a broadcast's outcomes are counted. */
const TALLY_PAGE = 5000;

export class StoreDeliveryLedger implements DeliveryLedger {
  private readonly docs: Collection<LedgerDoc>;

  constructor(private readonly store: Store) {
    this.docs = store.collection<LedgerDoc>("broadcast_deliveries");
  }

  async init(): Promise<void> {
    // Completion counts a broadcast's finished deliveries (every few seconds while one
    // drains). On MongoDB an index serves it. The embedded engine keeps one array of
    // documents per index key, so with every delivery of a broadcast under one key each
    // later open or click would cost O(recipients): there the count scans instead.
    if (this.store.kind === "mongodb") await this.docs.createIndex({ keys: { final: 1, broadcastId: 1 }, sparse: true });
  }

  async add(entries: LedgerEntry[]): Promise<void> {
    const docs = entries.map((e): LedgerDoc => {
      const doc: LedgerDoc = { _id: e.deliveryId, broadcastId: e.broadcastId, wave: e.wave };
      if (e.variant !== undefined) doc.variant = e.variant;
      if (e.settled) Object.assign(doc, { [e.settled]: true, final: true });
      return doc;
    });
    try {
      await this.docs.insertMany(docs);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      // A window published again after a restart: keep what exists, add what is missing.
      for (const doc of docs) {
        const { _id, ...rest } = doc;
        await this.docs.updateOne({ _id }, { $setOnInsert: rest }, { upsert: true });
      }
    }
  }

  async mark(deliveryId: string, kind: OutcomeKind): Promise<MarkResult> {
    const final = FINAL_OUTCOMES.has(kind);
    const before = await this.docs.findOneAndUpdate(
      { _id: deliveryId },
      { $set: final ? { [kind]: true, final: true } : { [kind]: true } },
      { returnDocument: "before" },
    );
    if (!before) return { known: false, first: false, becameFinal: false, wasSent: false, wave: 0 };
    return { known: true, first: before[kind] !== true, becameFinal: final && before.final !== true, wasSent: before.sent === true, wave: before.wave, variant: before.variant };
  }

  async markMany(marks: ReadonlyArray<{ deliveryId: string; kind: OutcomeKind }>): Promise<MarkResult[]> {
    if (marks.length === 0) return [];
    const ids = [...new Set(marks.map((m) => m.deliveryId))];
    const docs = new Map((await this.docs.find({ _id: { $in: ids } })).map((d) => [d._id, d] as const));
    const results: MarkResult[] = [];
    const sets = new Map<string, Record<string, true>>();
    for (const { deliveryId, kind } of marks) {
      const before = docs.get(deliveryId);
      if (!before) {
        results.push({ known: false, first: false, becameFinal: false, wasSent: false, wave: 0 });
        continue;
      }
      const final = FINAL_OUTCOMES.has(kind);
      results.push({ known: true, first: before[kind] !== true, becameFinal: final && before.final !== true, wasSent: before.sent === true, wave: before.wave, variant: before.variant });
      // Later pairs of the batch see this one's effect, as sequential marks would.
      before[kind] = true;
      if (final) before.final = true;
      const set = sets.get(deliveryId) ?? {};
      set[kind] = true;
      if (final) set.final = true;
      sets.set(deliveryId, set);
    }
    if (sets.size > 0) await this.docs.bulkWrite([...sets].map(([_id, $set]) => ({ updateOne: { filter: { _id }, update: { $set } } })));
    return results;
  }

  async countFinal(broadcastId: string): Promise<number> {
    // The _id range keeps the embedded store's scan to this broadcast's entries (it has no index here).
    return this.docs.countDocuments({ _id: { $gt: `${broadcastId}.`, $lt: `${broadcastId}/` }, final: true, broadcastId });
  }

  async tally(broadcastId: string): Promise<DeliveryTally> {
    const kinds = { sent: 1, deferred: 1, bounced: 1, failed: 1, suppressed: 1, final: 1 } as const;
    const t: DeliveryTally = { sent: 0, delivered: 0, deferred: 0, bounced: 0, failed: 0, suppressed: 0, finalized: 0 };
    // In pages along the _id (every delivery id starts with "<broadcastId>."): a million
    // recipients' entries read at once held hundreds of MB until the count was done.
    const prefix = `${broadcastId}.`;
    const end = `${broadcastId}/`;
    for (let after = prefix, docs: LedgerDoc[] = []; ; after = docs[docs.length - 1]!._id) {
      docs = await this.docs.find({ _id: { $gt: after, $lt: end }, broadcastId }, { projection: { ...kinds, _id: 1 }, sort: { _id: 1 }, limit: TALLY_PAGE });
      this.count(docs, t);
      if (docs.length < TALLY_PAGE) return t;
    }
  }

  async variantTally(broadcastId: string): Promise<Record<string, AbVariantCounts>> {
    const out: Record<string, AbVariantCounts> = {};
    const end = `${broadcastId}/`;
    for (let after = `${broadcastId}.`, docs: LedgerDoc[] = []; ; after = docs[docs.length - 1]!._id) {
      docs = await this.docs.find(
        { _id: { $gt: after, $lt: end }, broadcastId },
        { projection: { _id: 1, variant: 1, sent: 1, bounced: 1, opened: 1, clicked: 1 }, sort: { _id: 1 }, limit: TALLY_PAGE },
      );
      for (const d of docs) {
        if (d.variant === undefined) continue;
        const c = (out[abStatsKey(d.variant)] ??= emptyAbCounts());
        c.recipients++;
        if (d.sent && !d.bounced) c.delivered++;
        if (d.opened) c.uniqueOpens++;
        if (d.clicked) c.uniqueClicks++;
      }
      if (docs.length < TALLY_PAGE) return out;
    }
  }

  private count(docs: readonly LedgerDoc[], t: DeliveryTally): void {
    for (const d of docs) {
      if (d.sent) t.sent++;
      if (d.sent && !d.bounced) t.delivered++;
      if (d.deferred) t.deferred++;
      if (d.bounced) t.bounced++;
      if (d.failed) t.failed++;
      if (d.suppressed) t.suppressed++;
      if (d.final) t.finalized++;
    }
  }
}

type WarmupDoc = { _id: string; day: string; activeDaysBefore: number; sentOnDay: number };

export class WarmupStore implements WarmupRepository {
  private readonly docs: Collection<WarmupDoc>;

  constructor(store: Store) {
    this.docs = store.collection<WarmupDoc>("warmup_accounts");
  }

  async get(workspaceId: string): Promise<WarmupAccount | undefined> {
    const doc = await this.docs.findOne({ _id: workspaceId });
    if (!doc) return undefined;
    const { _id, ...account } = doc;
    return account;
  }

  async take(workspaceId: string, expected: WarmupAccount | undefined, today: WarmupAccount, count: number): Promise<boolean> {
    const next = { ...today, sentOnDay: today.sentOnDay + count };
    if (!expected) {
      try {
        await this.docs.insertOne({ _id: workspaceId, ...next });
        return true;
      } catch (err) {
        if (err instanceof DuplicateKeyError) return false;
        throw err;
      }
    }
    const res = await this.docs.updateOne(
      { _id: workspaceId, day: expected.day, sentOnDay: expected.sentOnDay, activeDaysBefore: expected.activeDaysBefore },
      { $set: next },
    );
    return res.matchedCount === 1;
  }
}

type TimelineDoc = { _id: string; broadcastId: string; minute: number } & Partial<Record<TimelineKind, number>>;
const MINUTE_MS = 60_000;

export class TimelineStore implements TimelineRepository {
  private readonly docs: Collection<TimelineDoc>;

  constructor(store: Store) {
    this.docs = store.collection<TimelineDoc>("broadcast_timeline");
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { broadcastId: 1, minute: 1 } });
  }

  async add(broadcastId: string, at: Date, inc: Partial<Record<TimelineKind, number>>): Promise<void> {
    const minute = Math.floor(at.getTime() / MINUTE_MS);
    // One document per (broadcast, minute): an upserted $inc, so concurrent consumers add up.
    await this.docs.updateOne({ _id: `${broadcastId}:${minute}` }, { $setOnInsert: { broadcastId, minute }, $inc: inc }, { upsert: true });
  }

  async list(broadcastId: string): Promise<TimelinePoint[]> {
    const docs = await this.docs.find({ broadcastId }, { sort: { minute: 1 } });
    return docs.map((d) => ({
      at: new Date(d.minute * MINUTE_MS),
      sent: d.sent ?? 0,
      delivered: d.delivered ?? 0,
      opened: d.opened ?? 0,
      clicked: d.clicked ?? 0,
      bounced: d.bounced ?? 0,
      planned: d.planned ?? 0,
    }));
  }
}

/** Every repository, with its indexes in place. */
export async function openStores(store: Store) {
  const broadcasts = new BroadcastStore(store);
  const contents = new LockedContentStore(store);
  const pages = new PageStore(store);
  const ledger = new StoreDeliveryLedger(store);
  const warmup = new WarmupStore(store);
  const timeline = new TimelineStore(store);
  await Promise.all([broadcasts.init(), contents.init(), pages.init(), ledger.init(), timeline.init()]);
  return { broadcasts, lockedContent: contents, pages, ledger, warmup, timeline };
}
