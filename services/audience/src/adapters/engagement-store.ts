import { DuplicateKeyError, type Collection, type Filter, type Store } from "@mailroom/store/port.js";
import type { EngagementCondition, EngagementEvent } from "@mailroom/filter/filter.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

/**
 * Engagement records (DESIGN §9.4's `$engagement`), built from the MailEvents stream:
 *
 * - `contact_engagement`: one document per unique (workspace, contact, event kind, message),
 *   `_id` "<workspace>:<kind>:<broadcast>:<contact>:<message>" (so a redelivered or republished
 *   event is recorded once), with the broadcast ("" for other mail) and the event's time.
 * - `contact_engagement_totals`: one document per (workspace, contact, kind), `_id`
 *   "<workspace>:<kind>:<contact>", with how many such messages and the last time, so "opened
 *   anything" reads one small document per contact instead of every event.
 *
 * - `contact_engagement_recent`: one document per (workspace, contact) that opened or clicked,
 *   `_id` "<workspace>:<contact>", with the times of its latest opens and clicks (epoch minutes,
 *   at most RECENT_MAX, in the order recorded): the best-hour plan of OPTIMAL broadcasts reads a
 *   page of contacts as one range of small documents instead of every record of theirs.
 *   Records kept before it existed are added once by backfillRecent (in the background at start).
 *
 * The ids put what a condition asks for first: one broadcast's events of a kind, or a kind's
 * totals, are one contiguous range of the primary key, read in key order (on the embedded
 * store a sequential scan of the documents tree, no index lookups). Conditions with a time
 * read the `at` / `last` indexes from that time on. Every read names its workspace (the id
 * prefix or the field); every scan is paged (memory holds one page and the set of contact ids
 * being built).
 */
export const ENGAGEMENT_COLLECTION = "contact_engagement";
export const ENGAGEMENT_TOTALS_COLLECTION = "contact_engagement_totals";
export const ENGAGEMENT_RECENT_COLLECTION = "contact_engagement_recent";
/** Opens and clicks kept per contact for its best hour (90 days of a daily newsletter's opens and clicks fit). */
export const RECENT_MAX = 200;
/** The kinds the best hour counts. */
const RECENT_KINDS: ReadonlySet<EngagementEvent> = new Set(["opened", "clicked"]);
/** The document saying the records kept before the recent times existed were added (backfillRecent). */
const BACKFILL_ID = "~backfill";

export interface EngagementRecord {
  _id: string;
  workspaceId: string;
  contactId: string;
  kind: EngagementEvent;
  /** The message: the broadcast's id, the email's id, or the RFC 5322 Message-ID. */
  messageId: string;
  /** The broadcast the message belongs to; "" for other mail. */
  broadcastId: string;
  at: Date;
}

export interface EngagementTotal {
  _id: string;
  workspaceId: string;
  contactId: string;
  kind: EngagementEvent;
  /** Distinct messages with such an event. */
  count: number;
  first: Date;
  last: Date;
}

export interface EngagementRecent {
  _id: string;
  workspaceId: string;
  contactId: string;
  /** Epoch minutes of its latest opens and clicks, in the order recorded. */
  times: number[];
}

export interface NewEngagement {
  workspaceId: string;
  contactId: string;
  kind: EngagementEvent;
  messageId: string;
  broadcastId?: string;
  at: Date;
}

/** The id of an event's record (bulk loaders, e.g. benchmarks, build records with it). */
export const engagementId = (e: Pick<NewEngagement, "workspaceId" | "kind" | "broadcastId" | "contactId" | "messageId">) =>
  `${e.workspaceId}:${e.kind}:${e.broadcastId ?? ""}:${e.contactId}:${e.messageId}`;
/** The id of a contact's recent opens and clicks. */
export const engagementRecentId = (workspaceId: string, contactId: string) => `${workspaceId}:${contactId}`;
/** The id of a contact's totals for a kind. */
export const engagementTotalId = (workspaceId: string, kind: EngagementEvent, contactId: string) => `${workspaceId}:${kind}:${contactId}`;

/** Up to this many contacts are read one range each (engagedTimes); more, as one range from the first to the last. */
const FEW_CONTACTS = 50;

/** Documents per read while resolving a condition. */
const PAGE = 5_000;

export interface EngagementStoreOptions {
  /** Documents per read (tests use tiny pages to cross page boundaries). */
  pageSize?: number;
}

export class EngagementStore {
  private constructor(
    private readonly events: Collection<Stored<EngagementRecord>>,
    private readonly totals: Collection<Stored<EngagementTotal>>,
    private readonly recent: Collection<Stored<EngagementRecent>>,
    private readonly pageSize: number,
  ) {}

  static async open(store: Store, opts: EngagementStoreOptions = {}): Promise<EngagementStore> {
    const events = store.collection<Stored<EngagementRecord>>(ENGAGEMENT_COLLECTION);
    const totals = store.collection<Stored<EngagementTotal>>(ENGAGEMENT_TOTALS_COLLECTION);
    const recent = store.collection<Stored<EngagementRecent>>(ENGAGEMENT_RECENT_COLLECTION);
    await Promise.all([
      // Events of a kind since a time ("at least N since …").
      events.createIndex({ keys: { workspaceId: 1, kind: 1, at: 1 } }),
      // A contact's records, deleted with it.
      events.createIndex({ keys: { workspaceId: 1, contactId: 1 } }),
      // A contact's records newest first (its activity), paged by (at, _id).
      events.createIndex({ keys: { workspaceId: 1, contactId: 1, at: -1, _id: -1 } }),
      // Contacts with a kind of event since a time.
      totals.createIndex({ keys: { workspaceId: 1, kind: 1, last: 1 } }),
      totals.createIndex({ keys: { workspaceId: 1, contactId: 1 } }),
    ]);
    return new EngagementStore(events, totals, recent, opts.pageSize ?? PAGE);
  }

  /** Records one event; false when this (contact, kind, message) was recorded already. */
  async record(e: NewEngagement): Promise<boolean> {
    return (await this.recordMany([e]))[0];
  }

  /**
   * Records events together, as record() does one: answers, per event, whether it was new. A
   * broadcast's deliveries come by the thousand a second, so the audience unit's share of each
   * message is the writes, not the round trips: one bulk upsert of the records (the upserted
   * ones are the new ones), one that makes the totals missing, one that counts them (one write
   * a total: $inc, $max, $min), and one push of recent times — each a single transaction on the
   * embedded store.
   */
  async recordMany(events: readonly NewEngagement[]): Promise<boolean[]> {
    if (events.length === 0) return [];
    const ids = events.map(engagementId);
    // The first of equal events in a batch is recorded; the others are repeats.
    const firstOf = new Map<string, number>();
    ids.forEach((id, i) => firstOf.has(id) || firstOf.set(id, i));
    const unique = [...firstOf.values()];
    const inserted = await this.events.bulkWrite(
      unique.map((i) => {
        const e = events[i];
        const { _id, ...fields } = asDoc({ _id: ids[i], workspaceId: e.workspaceId, contactId: e.contactId, kind: e.kind, messageId: e.messageId, broadcastId: e.broadcastId ?? "", at: e.at } as EngagementRecord);
        return { updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } };
      }),
    );
    const fresh = new Set<number>();
    for (const index of Object.keys(inserted.upsertedIds)) fresh.add(unique[Number(index)]);
    if (fresh.size === 0) return events.map(() => false);
    // Per contact and kind: how many new messages, and their earliest and latest times.
    const totals = new Map<string, { e: NewEngagement; count: number; first: Date; last: Date }>();
    const recent = new Map<string, { workspaceId: string; contactId: string; times: number[] }>();
    for (const i of fresh) {
      const e = events[i];
      const key = engagementTotalId(e.workspaceId, e.kind, e.contactId);
      const t = totals.get(key);
      if (!t) totals.set(key, { e, count: 1, first: e.at, last: e.at });
      else {
        t.count++;
        if (e.at < t.first) t.first = e.at;
        if (e.at > t.last) t.last = e.at;
      }
      if (RECENT_KINDS.has(e.kind)) {
        const rk = engagementRecentId(e.workspaceId, e.contactId);
        const r = recent.get(rk) ?? { workspaceId: e.workspaceId, contactId: e.contactId, times: [] };
        r.times.push(minuteOf(e.at));
        recent.set(rk, r);
      }
    }
    // Missing totals made first (retried alone when another writer made one at the same time:
    // an upsert of nothing but $setOnInsert is the same however often it runs), then counted in
    // one write each (count, earliest and latest time), which no longer inserts and so cannot
    // collide: a retried batch never counts twice.
    const missing = [...totals].map(([_id, t]) => ({
      updateOne: {
        filter: { _id },
        update: { $setOnInsert: { workspaceId: t.e.workspaceId, contactId: t.e.contactId, kind: t.e.kind, count: 0, first: t.first, last: t.last } },
        upsert: true,
      },
    }));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.totals.bulkWrite(missing);
        break;
      } catch (err) {
        if (!(err instanceof DuplicateKeyError) || attempt > 2) throw err;
      }
    }
    await this.totals.bulkWrite(
      [...totals].map(([_id, t]) => ({ updateOne: { filter: { _id }, update: { $inc: { count: t.count }, $max: { last: t.last }, $min: { first: t.first } } } })),
    );
    if (recent.size) await this.pushRecent([...recent.values()]);
    return events.map((_, i) => fresh.has(i));
  }

  /** Appends times to contacts' recent opens and clicks (keeping the last RECENT_MAX), creating their documents. */
  private async pushRecent(rows: { workspaceId: string; contactId: string; times: number[] }[]): Promise<void> {
    const ops = rows.map((r) => ({
      updateOne: {
        filter: { _id: engagementRecentId(r.workspaceId, r.contactId) },
        update: { $push: { times: { $each: r.times, $slice: -RECENT_MAX } }, $setOnInsert: { workspaceId: r.workspaceId, contactId: r.contactId } },
        upsert: true,
      },
    }));
    for (let attempt = 0; ; attempt++) {
      try {
        await this.recent.bulkWrite(ops);
        return;
      } catch (err) {
        // Two first events of a contact at once: the loser's upsert finds the document on retry.
        if (!(err instanceof DuplicateKeyError) || attempt > 2 || ops.length > 1) throw err;
      }
    }
  }

  /**
   * Adds the opens and clicks of the last `days` recorded before the recent times were kept
   * (once per store: a marker says it is done, with a cursor so a restart resumes). Reads the
   * records in _id order a page at a time; events recorded from `startedAt` on were added by
   * record() already and are left out. Answers the opens and clicks added and the writes of
   * contacts' documents they took (null: done before).
   */
  async backfillRecent(startedAt: Date, days: number): Promise<{ events: number; updates: number } | null> {
    const marker = (await this.recent.findOne({ _id: BACKFILL_ID })) as unknown as { done?: boolean; after?: string } | null;
    if (marker?.done) return null;
    const since = new Date(startedAt.getTime() - days * 86_400_000);
    let after = marker?.after ?? "";
    let updates = 0;
    let events = 0;
    for (;;) {
      const page = await this.events.find(
        { _id: { $gt: after } },
        { sort: { _id: 1 }, limit: this.pageSize, projection: { _id: 1, workspaceId: 1, contactId: 1, kind: 1, at: 1 } },
      );
      const byContact = new Map<string, { workspaceId: string; contactId: string; times: number[] }>();
      for (const doc of page) {
        const at = timeOf(doc.at as unknown);
        if (!RECENT_KINDS.has(doc.kind as EngagementEvent) || at < since.getTime() || at >= startedAt.getTime()) continue;
        const key = engagementRecentId(doc.workspaceId as string, doc.contactId as string);
        const row = byContact.get(key) ?? { workspaceId: doc.workspaceId as string, contactId: doc.contactId as string, times: [] };
        row.times.push(minuteOf(new Date(at)));
        byContact.set(key, row);
        events++;
      }
      if (byContact.size) await this.pushRecent([...byContact.values()]);
      updates += byContact.size;
      if (page.length < this.pageSize) break;
      after = page[page.length - 1]._id;
      await this.recent.updateOne({ _id: BACKFILL_ID }, { $set: { after } }, { upsert: true });
    }
    await this.recent.updateOne({ _id: BACKFILL_ID }, { $set: { done: true, after } }, { upsert: true });
    return { events, updates };
  }

  /**
   * The workspace's contacts with at least `min` such events (of the broadcast, since the
   * time), sorted (JavaScript string order), each once, frozen (the store matches a frozen
   * sorted list by bisection and sorts it only once however many pages use it).
   *
   * The contact id is part of every record's and total's _id: a condition that needs each
   * contact once reads those ids with findIdSegments over one range (a broadcast's records by
   * _id prefix, a kind's totals by prefix or by the `last` index from a time), which the
   * embedded store answers from the keys alone. The others page through _ids and the time
   * they are ordered by (covered reads); only a total with `min` above 1 (its count) and a
   * broadcast's events since a time read documents.
   */
  async contactsWith(workspaceId: string, c: EngagementCondition): Promise<readonly string[]> {
    const out: string[] = [];
    if (c.min <= 1 && !(c.broadcastId !== undefined && c.since)) {
      // Each contact once is enough: the contact ids straight from the keys of one range (a
      // broadcast's records, or a kind's totals, since a time or ever), never a document.
      const broadcast = c.broadcastId !== undefined ? `${c.broadcastId}:` : "";
      const prefix = `${workspaceId}:${c.event}:${broadcast}`;
      const filter: Filter = c.since && !broadcast ? { workspaceId, kind: c.event, last: { $gte: c.since } } : { _id: { $gt: prefix, $lt: `${prefix}\uffff` } };
      const source = broadcast ? this.events : this.totals;
      for await (const batch of source.findIdSegments(filter, { prefix, end: broadcast ? ":" : undefined }, { batchSize: this.pageSize })) {
        for (const id of batch) out.push(id);
      }
      return sortedOnce(out);
    }
    if (c.broadcastId !== undefined || (c.since && c.min > 1)) {
      // "<workspace>:<kind>:<broadcast>:<contact>:<message>": the contact is the fourth part.
      const counts = c.min > 1 ? new Map<string, number>() : undefined;
      const add = (doc: Partial<EngagementRecord> & { _id: string }) => {
        if (c.since && doc.at !== undefined && doc.at < c.since) return;
        const contact = part(doc._id, 3);
        if (!counts) return void out.push(contact);
        const n = (counts.get(contact) ?? 0) + 1;
        counts.set(contact, n);
        if (n === c.min) out.push(contact);
      };
      if (c.broadcastId !== undefined) {
        const projection: Record<string, 1> = c.since ? { _id: 1, at: 1 } : { _id: 1 };
        await byPrefix(this.events, `${workspaceId}:${c.event}:${c.broadcastId}:`, this.pageSize, projection, add);
      } else {
        await byTime(this.events, "at", { workspaceId, kind: c.event }, c.since!, this.pageSize, add);
      }
      return sortedOnce(out);
    }
    // "<workspace>:<kind>:<contact>": the contact is the third part. Every total counts at least one message.
    const add = (doc: Partial<EngagementTotal> & { _id: string }) => {
      if (c.min > 1 && (doc.count ?? 0) < c.min) return;
      if (c.since && doc.last !== undefined && doc.last < c.since) return;
      out.push(part(doc._id, 2));
    };
    if (c.since) await byTime(this.totals, "last", { workspaceId, kind: c.event }, c.since, this.pageSize, add, c.min > 1 ? ["count"] : []);
    else await byPrefix(this.totals, `${workspaceId}:${c.event}:`, this.pageSize, c.min > 1 ? { _id: 1, count: 1 } : { _id: 1 }, add);
    return sortedOnce(out);
  }

  /**
   * One contact's records, newest first (ties: larger _id first), `limit` of them after the
   * cursor (the last record of the previous page). Reads the (workspace, contact, at) index.
   */
  async listForContact(workspaceId: string, contactId: string, page: { limit: number; after?: { at: Date; id: string } }): Promise<EngagementRecord[]> {
    const filter: Filter = { workspaceId, contactId };
    if (page.after) {
      filter.at = { $lte: page.after.at };
      filter.$or = [{ at: { $lt: page.after.at } }, { _id: { $lt: page.after.id } }];
    }
    const docs = await this.events.find(filter, { sort: { at: -1, _id: -1 }, limit: page.limit });
    return docs.map((d) => ({ ...(d as unknown as EngagementRecord), at: new Date(d.at as unknown as string | Date) }));
  }

  /**
   * Each open and click since `since` of the given contacts (and, for a page of many, of the
   * contacts between them: the caller keeps its own), from their recent times: `each(contactId,
   * at ms)`. A page of an audience (in contact-id order) is one range of the recent documents
   * from its first contact to its last, so the pages of a whole audience read each document once
   * at most; a few contacts are read by id.
   */
  async engagedTimes(workspaceId: string, contactIds: readonly string[], since: Date, each: (contactId: string, at: number) => void): Promise<void> {
    if (contactIds.length === 0) return;
    const from = since.getTime();
    // An audience's page comes in id order already.
    let ascending = true;
    for (let i = 1; i < contactIds.length && ascending; i++) ascending = contactIds[i - 1] < contactIds[i];
    const sorted = ascending ? contactIds : [...contactIds].sort();
    const id = (c: string) => engagementRecentId(workspaceId, c);
    const filter = sorted.length <= FEW_CONTACTS ? { _id: { $in: sorted.map(id) } } : { _id: { $gte: id(sorted[0]), $lte: id(sorted[sorted.length - 1]) } };
    const prefix = workspaceId.length + 1;
    // Small documents: read whole (a projection would copy each).
    const docs = await this.recent.find(filter);
    for (const doc of docs) {
      const contactId = doc._id.slice(prefix);
      for (const minute of (doc.times as number[] | undefined) ?? []) {
        const at = minute * 60_000;
        if (at >= from) each(contactId, at);
      }
    }
  }

  /** Every record of a contact (its deletion and erasure); answers how many events went. */
  async deleteForContact(workspaceId: string, contactId: string): Promise<number> {
    const [{ deletedCount }] = await Promise.all([
      this.events.deleteMany({ workspaceId, contactId }),
      this.totals.deleteMany({ workspaceId, contactId }),
      this.recent.deleteOne({ _id: engagementRecentId(workspaceId, contactId) }),
    ]);
    return deletedCount;
  }
}

const minuteOf = (at: Date) => Math.floor(at.getTime() / 60_000);
const timeOf = (v: unknown) => (v instanceof Date ? v.getTime() : new Date(v as string | number).getTime());

/** The `n`th ":"-separated part of a record's _id (ids, kinds, broadcasts and contacts hold no ":"). */
function part(id: string, n: number): string {
  let from = 0;
  for (let i = 0; i < n; i++) from = id.indexOf(":", from) + 1;
  const to = id.indexOf(":", from);
  // A copy of its own: a slice keeps the whole _id alive (V8 sliced strings), twice the memory
  // for every contact id held in a resolved list.
  return Buffer.from(id.slice(from, to < 0 ? id.length : to), "utf8").toString("utf8");
}

/** Sorted, each once, frozen. */
function sortedOnce(ids: string[]): readonly string[] {
  ids.sort();
  let n = 0;
  for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[n - 1]) ids[n++] = ids[i];
  ids.length = n;
  return Object.freeze(ids);
}

/**
 * Pages through the documents whose _id starts with `prefix`, in _id order, with the fields
 * of `projection`. Only the _id is named, so every adapter reads the primary key's range
 * (workspace ids, kinds, broadcast and contact ids hold no ":").
 */
async function byPrefix<T extends { _id: string }>(
  coll: Collection<Stored<T>>, prefix: string, pageSize: number, projection: Record<string, 1>, each: (doc: Partial<T> & { _id: string }) => void,
): Promise<void> {
  let after = prefix;
  const end = `${prefix}\uffff`;
  for (;;) {
    const page = await coll.find({ _id: { $gt: after, $lt: end } }, { sort: { _id: 1 }, limit: pageSize, projection });
    for (const doc of page) each(doc as Partial<T> & { _id: string });
    if (page.length < pageSize) return;
    after = page[page.length - 1]._id;
  }
}

/**
 * Pages through the documents whose `field` (a Date) is at least `since`, in (field, _id)
 * order, with the _id, that field and `more`: each page starts at the last page's latest time
 * and skips the documents of that time it already read.
 */
async function byTime<T extends { _id: string }>(
  coll: Collection<Stored<T>>, field: string, filter: Filter, since: Date, pageSize: number, each: (doc: Partial<T> & { _id: string }) => void, more: string[] = [],
): Promise<void> {
  let from = since;
  let skip = 0;
  const projection: Record<string, 1> = { _id: 1, [field]: 1 };
  for (const f of more) projection[f] = 1;
  for (;;) {
    const page = await coll.find({ ...filter, [field]: { $gte: from } }, { sort: { [field]: 1, _id: 1 }, skip, limit: pageSize, projection });
    for (const doc of page) {
      each(doc as Partial<T> & { _id: string });
      const at = (doc as Record<string, unknown>)[field] as Date;
      if (at.getTime() === from.getTime()) skip++;
      else {
        from = at;
        skip = 1;
      }
    }
    if (page.length < pageSize) return;
  }
}

/** Deletes a contact's engagement records (ContactStore.delete: every deletion and erasure). */
export function deleteEngagementOf(store: Store, workspaceId: string, contactId: string): Promise<unknown> {
  return Promise.all([
    store.collection(ENGAGEMENT_COLLECTION).deleteMany({ workspaceId, contactId }),
    store.collection(ENGAGEMENT_TOTALS_COLLECTION).deleteMany({ workspaceId, contactId }),
    store.collection(ENGAGEMENT_RECENT_COLLECTION).deleteOne({ _id: engagementRecentId(workspaceId, contactId) }),
  ]);
}
