/** A collection of the LMDB store: its documents tree, its index tree, reads and writes of the port. */
import { compareKeys, type Database, type RootDatabase } from "lmdb";
import { DuplicateKeyError, type BulkWriteOperation, type BulkWriteResult, type Collection, type Doc, type Filter, type FindOneAndUpdateOptions, type FindOptions, type IdSegment, pagedIdSegments, type IndexSpec, type Sort, type Update, type UpdateOptions, type UpdateResult } from "../port.js";
import { applyUpdate, assertDefinedFilter, cloneValue, deepEqual, getPath, compileFilter, newStoreId, upsertSeed, validateUpdate, valuesAt } from "../query.js";
import { type CountSource, countIdEntries, countIndexEntries, countWildcardEntries } from "./counting.js";
import { IndexBatch } from "./index-batch.js";
import { type CollectionMeta, EMPTY, HIGH, type IndexDef, T_DATE, conjunction, decodeEntry, entryId, entryKey, entryKeysOf, flatKey, indexTuples, isWildcardField, ixKey, partFields, sameTuples, tagBase, tagChar, typeTag } from "./keys.js";
import { project, sorter } from "./order.js";
import { type Plan, type Range, bisect, planQuery } from "./planner.js";
import { PRINTABLE, exactRange, segmentBatches, segmentKeys } from "./segments.js";

const NO_DICTIONARY = Buffer.alloc(0);
/** lmdb-js keeps the msgpack record structures of a database under this key, beside the documents. */
const STRUCTURES = Symbol.for("structures");

/** What a collection uses of its store (LmdbStore, which opens the collections). */
export interface LmdbHost {
  readonly root: RootDatabase;
  readonly meta: Database<unknown, string>;
  /** Write transaction callbacks of this process running now. */
  readonly writing: number;
  assertOpen(): void;
  transact<R>(fn: () => R): Promise<R>;
  openDb<D>(name: string, options: object): D;
  lastTxnId(): number;
}

export class LmdbCollection<T extends Doc> implements Collection<T> {
  readonly docs: Database<Doc, string>;
  readonly index: Database<Buffer, (string | number)[]>;
  /** The last "collect" plan's sorted ids, valid while the store's last transaction id is `txnId`. */
  private collected: { key: string; txnId: number; ids: string[] } | undefined;
  private metaCache: CollectionMeta;
  /** The stored bytes `metaCache` was decoded from. */
  private metaBytes: Buffer | undefined;

  constructor(
    private readonly store: LmdbHost,
    readonly name: string,
  ) {
    // Shared record structures: field names are stored once per collection, not in every document.
    // LZ4 from 64 bytes up: a fifth off a typical contact (the email twice, as typed and lowercased,
    // costs one copy). No dictionary: lmdb loads it again for every value (~9 us per document),
    // and the stored bytes then depend on no file outside this format. Values stored uncompressed
    // (older stores, small documents) stay readable: a status byte tells them apart.
    this.docs = store.openDb<Database<Doc, string>>(`d:${name}`, {
      sharedStructuresKey: STRUCTURES,
      compression: { threshold: 64, dictionary: NO_DICTIONARY },
    });
    this.index = store.openDb<Database<Buffer, (string | number)[]>>(`i:${name}`, { encoding: "binary" });
    this.metaCache = this.readMeta();
  }

  private readMeta(): CollectionMeta {
    return (this.store.meta.get(this.name) as CollectionMeta | undefined) ?? { next: 1, indexes: [] };
  }

  /**
   * Fresh definitions inside a write transaction (another process may have added an index).
   * Decoded again only when the stored bytes changed: every write asks, and decoding them
   * each time was 2 % of the email service's CPU.
   */
  private metaInTxn(): CollectionMeta {
    const stored = this.store.meta.getBinary(this.name);
    if (stored && this.metaBytes?.equals(stored)) return this.metaCache;
    this.metaBytes = stored;
    this.metaCache = this.readMeta();
    return this.metaCache;
  }

  private duplicateKey(): DuplicateKeyError {
    return new DuplicateKeyError(`duplicate key in collection "${this.name}"`);
  }

  private async write<R>(fn: () => R): Promise<R> {
    this.store.assertOpen();
    return this.store.transact(fn);
  }

  // --- stored documents ----------------------------------------------------------------------
  // A stored document holds `_id: undefined` (3 bytes) in place of its _id, which is its key:
  // the id is not stored twice, and the field keeps its place (first) in the decoded object.
  // Documents stored before this layout hold their _id; reading sets it from the key either way.

  private getDoc(id: string): Doc | undefined {
    const doc = this.docs.get(id);
    if (doc) doc._id = id;
    return doc;
  }

  /** Stores a document under its _id (encoded synchronously, so the object is restored at once). */
  private putValue(doc: Doc, noOverwrite = false): boolean {
    const id = doc._id;
    (doc as { _id: unknown })._id = undefined;
    try {
      // Inside a write transaction putSync answers whether it wrote (lmdb's types say void):
      // false only when `noOverwrite` met a taken key.
      return (this.docs.putSync(id, doc, { noOverwrite }) as unknown) !== false;
    } finally {
      doc._id = id;
    }
  }

  // --- reading ---------------------------------------------------------------------------

  private expired(doc: Doc, meta: CollectionMeta, now: number): boolean {
    for (const def of meta.indexes) {
      if (def.ttl === undefined) continue;
      const at = getPath(doc, def.fields[0]);
      if (at instanceof Date && at.getTime() + def.ttl * 1000 <= now) return true;
    }
    return false;
  }

  /** Matching documents in plan order (lazily: a caller may stop early). */
  private *candidates(filter: Filter, plan: Plan, meta: CollectionMeta): Generator<Doc> {
    const now = Date.now();
    const hasTtl = meta.indexes.some((d) => d.ttl !== undefined);
    const matches = compileFilter(filter);
    const accept = (doc: Doc | undefined): doc is Doc =>
      doc !== undefined && (!hasTtl || !this.expired(doc, meta, now)) && matches(doc);
    if (plan.kind === "ids") {
      const ids = plan.ids!;
      const [from, to] = plan.idSlice ?? [0, ids.length];
      for (let i = from; i < to; i++) {
        const doc = this.getDoc(ids[i]);
        if (accept(doc)) yield doc;
      }
      return;
    }
    if (plan.kind === "primary") {
      const { start, end } = plan.ranges![0];
      const range = plan.reverse ? { start: end, end: start, reverse: true } : { start, end };
      for (const { key, value } of this.docs.getRange(range as never)) {
        if (typeof key === "symbol") continue;
        value._id = key;
        if (accept(value)) yield value;
      }
      return;
    }
    for (const id of this.indexIds(plan)) {
      const doc = this.getDoc(id);
      if (accept(doc)) yield doc;
    }
  }

  /**
   * The sorted _ids of a "collect" plan's ranges. Paging through them (`_id > last`, one page
   * per query) would read every range again for each page, so the last list is kept while the
   * store has committed nothing since (the environment's last transaction id, which counts
   * every process's commits); never inside a write transaction, which sees its own changes.
   * The id is taken before a fresh read snapshot is started for the list, so the list holds at
   * least what that transaction committed, and is used again only while nothing came after it.
   */
  private collectedIds(plan: Plan): string[] {
    const key = `${plan.index!.no}\u0000${JSON.stringify(plan.ranges)}`;
    const writing = this.store.writing > 0;
    const txnId = writing ? undefined : this.store.lastTxnId();
    const cached = this.collected;
    if (!writing && cached && cached.key === key && cached.txnId === txnId) return cached.ids;
    if (!writing) this.store.root.resetReadTxn();
    const ids = new Set<string>();
    for (const r of plan.ranges!) for (const k of this.index.getKeys({ start: r.start, end: r.end } as never)) ids.add(entryId(k));
    // JavaScript's order of strings: the one matchesFilter pages by (`_id > last`); sorting
    // with compareKeys instead made the sort cost as much as reading the keys.
    const sorted = [...ids].sort();
    if (!writing) this.collected = { key, txnId: txnId!, ids: sorted };
    return sorted;
  }

  /** The _ids an index plan's ranges hold, each once, in plan order (see Plan.idOrder). */
  private *indexIds(plan: Plan): Generator<string> {
    const ranges = plan.ranges!;
    const oriented = (r: Range) => (plan.reverse ? { start: r.end, end: r.start, reverse: true } : { start: r.start, end: r.end });
    if (plan.idOrder === "collect") {
      const sorted = this.collectedIds(plan);
      const { lo, hi } = plan.idBounds ?? {};
      // The slice within the _id bounds (a page after a cursor: found by bisection).
      const from = lo === undefined ? 0 : bisect(sorted, lo);
      const to = hi === undefined ? sorted.length : bisect(sorted, hi, true);
      if (plan.reverse) for (let i = to - 1; i >= from; i--) yield sorted[i];
      else for (let i = from; i < to; i++) yield sorted[i];
      return;
    }
    if (plan.idOrder === "merge") {
      // Every range is in _id order: take the smallest (reverse: largest) head each time.
      const cursors = ranges.map((r) => this.index.getKeys(oriented(r) as never)[Symbol.iterator]());
      const heads = cursors.map((c) => {
        const n = c.next();
        return n.done ? undefined : entryId(n.value);
      });
      const dir = plan.reverse ? -1 : 1;
      try {
        for (;;) {
          let best: string | undefined;
          for (const h of heads) if (h !== undefined && (best === undefined || compareKeys(h, best) * dir < 0)) best = h;
          if (best === undefined) return;
          for (let i = 0; i < heads.length; i++) {
            while (heads[i] !== undefined && compareKeys(heads[i]!, best) === 0) {
              const n = cursors[i].next();
              heads[i] = n.done ? undefined : entryId(n.value);
            }
          }
          yield best;
        }
      } finally {
        for (const c of cursors) c.return?.();
      }
    }
    const seen = !plan.distinct && (plan.index!.multikey || ranges.length > 1) ? new Set<string>() : undefined;
    for (const r of ranges) {
      for (const key of this.index.getKeys(oriented(r) as never)) {
        const id = entryId(key);
        if (seen) {
          if (seen.has(id)) continue;
          seen.add(id);
        }
        yield id;
      }
    }
  }

  /**
   * A covered read (as MongoDB has): when the projection, the filter and the sort name only
   * fields the plan's keys hold (the _id for the documents tree and "ids" plans; the fields of
   * a single-valued, non-wildcard index otherwise), the matching documents are built from the
   * keys, checked with matchesFilter like any candidate, and no document is read. An entry whose
   * values the key does not hold whole (a cut string, null or a missing field, an object) is
   * answered from its document. Undefined when the read is not covered.
   */
  private covered(filter: Filter, plan: Plan, meta: CollectionMeta, options: FindOptions & { sort?: Sort }): Generator<Doc> | undefined {
    if (meta.indexes.some((d) => d.ttl !== undefined) || plan.idOrder !== undefined) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    const wanted = Object.entries(options.projection!);
    // Only an including projection (one excluding fields keeps every other one).
    if (!wanted.some(([k, v]) => k !== "_id" && v) && !(wanted.length === 1 && options.projection!._id === 1)) return undefined;
    const fields = new Set<string>([...conds.keys(), ...Object.keys(options.sort ?? {}), ...wanted.filter(([, v]) => v).map(([k]) => k)]);
    fields.delete("_id");
    if (plan.kind === "ids" || plan.kind === "primary") return fields.size === 0 ? this.coveredIds(filter, plan) : undefined;
    const def = plan.index!;
    if (def.wildcard !== undefined || def.multikey) return undefined;
    const held = partFields(def);
    if (![...fields].every((f) => held.includes(f))) return undefined;
    return this.coveredEntries(filter, plan, def);
  }

  private *coveredIds(filter: Filter, plan: Plan): Generator<Doc> {
    const matches = compileFilter(filter);
    if (plan.kind === "ids") {
      const ids = plan.ids!;
      const [from, to] = plan.idSlice ?? [0, ids.length];
      for (let i = from; i < to; i++) {
        const doc = { _id: ids[i] };
        if (this.docs.doesExist(ids[i]) && matches(doc)) yield doc;
      }
      return;
    }
    const { start, end } = plan.ranges![0];
    const range = plan.reverse ? { start: end, end: start, reverse: true } : { start, end };
    for (const key of this.docs.getKeys(range as never)) {
      if (typeof key === "symbol") continue;
      const doc = { _id: key };
      if (matches(doc)) yield doc;
    }
  }

  private *coveredEntries(filter: Filter, plan: Plan, def: IndexDef): Generator<Doc> {
    const held = partFields(def);
    const base = tagBase(def);
    const matches = compileFilter(filter);
    for (const r of plan.ranges!) {
      const range = plan.reverse ? { start: r.end, end: r.start, reverse: true } : { start: r.start, end: r.end };
      for (const key of this.index.getKeys(range as never)) {
        const doc = decodeEntry(key as (string | number)[], held, base) ?? this.getDoc(entryId(key));
        if (doc && matches(doc)) yield doc;
      }
    }
  }

  private select(filter: Filter, options: FindOptions & { sort?: Sort } = {}): Doc[] {
    const meta = this.metaCache;
    const plan = planQuery(filter, options.sort, meta.indexes);
    const skip = options.skip ?? 0;
    const limit = options.limit && options.limit > 0 ? options.limit : Infinity;
    const out: Doc[] = [];
    const source = (options.projection && this.covered(filter, plan, meta, options)) || this.candidates(filter, plan, meta);
    if (plan.ordered) {
      let skipped = 0;
      for (const doc of source) {
        if (skipped < skip) {
          skipped++;
          continue;
        }
        out.push(doc);
        if (out.length >= limit) break;
      }
      return out;
    }
    for (const doc of source) out.push(doc);
    if (options.sort && Object.keys(options.sort).length > 0) out.sort(sorter(options.sort));
    return out.slice(skip, skip + limit);
  }

  // --- writing (inside a transaction) --------------------------------------------------------

  private entryKeys(doc: Doc, meta: CollectionMeta, tuples = this.tuplesOf(doc, meta)): Map<string, (string | number)[]> {
    const keys = new Map<string, (string | number)[]>();
    meta.indexes.forEach((def, i) => {
      for (const [k, key] of entryKeysOf(def, tuples[i], doc._id)) keys.set(k, key);
    });
    return keys;
  }

  private tuplesOf(doc: Doc, meta: CollectionMeta): unknown[][][] {
    return meta.indexes.map((def) => indexTuples(doc, def));
  }

  private removeDoc(doc: Doc, meta: CollectionMeta): void {
    for (const key of this.entryKeys(doc, meta).values()) this.index.removeSync(key);
    this.docs.removeSync(doc._id);
  }

  /** Throws DuplicateKeyError if `doc` collides on a unique index (expired holders are removed). */
  private checkUnique(doc: Doc, meta: CollectionMeta, now: number, only?: IndexDef, tuples?: unknown[][][]): void {
    const defs = only ? [only] : meta.indexes;
    for (let d = 0; d < defs.length; d++) {
      const def = defs[d];
      if (!def.unique) continue;
      for (const tuple of tuples?.[d] ?? indexTuples(doc, def)) {
        const prefix = flatKey(def, tuple);
        for (const key of this.index.getKeys({ start: prefix, end: [...prefix, HIGH] } as never)) {
          const otherId = entryId(key);
          if (otherId === doc._id) continue;
          const other = this.getDoc(otherId);
          if (!other) continue;
          if (!indexTuples(other, def).some((t) => t.every((v, i) => deepEqual(v, tuple[i]) && typeTag(v) === typeTag(tuple[i])))) continue;
          if (this.expired(other, meta, now)) {
            this.removeDoc(other, meta);
            continue;
          }
          throw this.duplicateKey();
        }
      }
    }
  }

  /**
   * Stores `next` (replacing `prev`), keeping the index entries in step. With `batch` (inserts
   * of one insertMany), the new index entries wait in it and go in together (see IndexBatch).
   */
  private putDoc(prev: Doc | undefined, next: Doc, meta: CollectionMeta, batch?: IndexBatch): void {
    if (!prev && meta.indexes.length === 0) {
      // No index (so no TTL either): the put itself refuses a taken _id (MDB_NOOVERWRITE),
      // without reading it first. An import's insertMany of thousands saves a read each.
      if (!this.putValue(next, true)) throw this.duplicateKey();
      return;
    }
    const now = Date.now();
    if (!prev) {
      const existing = this.getDoc(next._id);
      if (existing) {
        if (!this.expired(existing, meta, now)) throw this.duplicateKey();
        batch?.flush(this.index);
        this.removeDoc(existing, meta);
      }
    }
    const tuples = this.tuplesOf(next, meta);
    if (batch?.mayCollide(meta, tuples)) batch.flush(this.index);
    this.checkUnique(next, meta, now, undefined, tuples);
    if (batch && !prev) {
      batch.add(meta, tuples, next._id);
    } else if (prev) {
      const previous = this.tuplesOf(prev, meta);
      meta.indexes.forEach((def, i) => {
        // Most updates leave most indexed fields alone: their entries stay as they are.
        if (sameTuples(previous[i], tuples[i])) return;
        const before = entryKeysOf(def, previous[i], prev._id);
        const after = entryKeysOf(def, tuples[i], next._id);
        for (const [k, key] of before) if (!after.has(k)) this.index.removeSync(key);
        for (const [k, key] of after) if (!before.has(k)) this.index.putSync(key, EMPTY);
      });
    } else {
      meta.indexes.forEach((def, i) => {
        for (const tuple of tuples[i]) this.index.putSync(entryKey(def, tuple, next._id), EMPTY);
      });
    }
    this.putValue(next);
    if (tuples.some((t, i) => t.length > 1 && !meta.indexes[i].multikey) || meta.indexes.some((def) => !def.multikey && def.fields.some((f) => f.includes(".")))) {
      this.noteMultikey(next, meta);
    } else if (meta.indexes.some((def) => !def.multikey && def.fields.some((f) => Array.isArray(next[f])))) this.noteMultikey(next, meta);
  }

  private noteMultikey(doc: Doc, meta: CollectionMeta): void {
    let changed = false;
    for (const def of meta.indexes) {
      if (def.multikey) continue;
      if (def.fields.some((f) => valuesAt(doc, f.split(".")).some((v) => Array.isArray(v)))) {
        def.multikey = true;
        changed = true;
      }
    }
    if (changed) this.store.meta.putSync(this.name, meta);
  }

  private insertUpsert(filter: Filter, update: Update, meta: CollectionMeta): Doc {
    const doc = applyUpdate(upsertSeed(filter), update, true) as Doc;
    if (doc._id === undefined) doc._id = newStoreId();
    this.putDoc(undefined, doc, meta);
    return doc;
  }

  private withId(doc: T): Doc {
    const copy = cloneValue(doc) as Doc;
    if (copy._id === undefined) copy._id = newStoreId();
    return copy;
  }

  // --- the port ---------------------------------------------------------------------------

  async insertOne(doc: T): Promise<void> {
    const copy = this.withId(doc);
    return this.write(() => this.putDoc(undefined, copy, this.metaInTxn()));
  }

  /** Ordered like MongoDB: on a duplicate, the documents before it stay. One transaction. */
  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return this.store.assertOpen();
    const copies = docs.map((d) => this.withId(d));
    return this.write(() => {
      const meta = this.metaInTxn();
      const batch = new IndexBatch();
      try {
        for (const copy of copies) this.putDoc(undefined, copy, meta, batch);
      } finally {
        batch.flush(this.index);
      }
    });
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    const [doc] = this.select(filter, { ...options, limit: 1 });
    return doc ? project(doc as T, options.projection) : null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    return this.select(filter, options).map((d) => project(d as T, options.projection));
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.updateMatching(filter, update, options.upsert === true, false);
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.updateMatching(filter, update, false, true);
  }

  private async updateMatching(filter: Filter, update: Update, upsert: boolean, multi: boolean): Promise<UpdateResult> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    return this.write(() => this.updateInTxn(filter, update, upsert, multi, this.metaInTxn()));
  }

  async bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult> {
    // Validated and copied up front: the transaction runs later, and a bad operation fails the call before any write.
    const ops = operations.map((op) => {
      if ("insertOne" in op) return { insert: this.withId(op.insertOne.document) };
      validateUpdate(op.updateOne.update);
      assertDefinedFilter(op.updateOne.filter);
      return { filter: cloneValue(op.updateOne.filter) as Filter, update: cloneValue(op.updateOne.update) as Update, upsert: op.updateOne.upsert === true };
    });
    const result: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
    if (ops.length === 0) {
      this.store.assertOpen();
      return result;
    }
    await this.write(() => {
      const meta = this.metaInTxn();
      ops.forEach((op, i) => {
        if ("insert" in op) {
          this.putDoc(undefined, op.insert!, meta);
          result.insertedCount++;
          return;
        }
        const r = this.updateInTxn(op.filter, op.update, op.upsert, false, meta);
        result.matchedCount += r.matchedCount;
        result.modifiedCount += r.modifiedCount;
        if (r.upsertedId !== undefined) {
          result.upsertedCount++;
          result.upsertedIds[i] = r.upsertedId;
        }
      });
    });
    return result;
  }

  private updateInTxn(filter: Filter, update: Update, upsert: boolean, multi: boolean, meta: CollectionMeta): UpdateResult {
    const matched = this.select(filter, multi ? {} : { limit: 1 });
    if (matched.length === 0) {
      if (!upsert) return { matchedCount: 0, modifiedCount: 0 };
      return { matchedCount: 0, modifiedCount: 0, upsertedId: this.insertUpsert(filter, update, meta)._id };
    }
    let modifiedCount = 0;
    for (const doc of matched) {
      // Shared: `doc` was just read, and is wanted only for the index entries it had.
      const next = applyUpdate(doc, update, false, { share: true });
      if (deepEqual(doc, next)) continue;
      this.putDoc(doc, next, meta);
      modifiedCount++;
    }
    return { matchedCount: matched.length, modifiedCount };
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    const returnBefore = options.returnDocument === "before";
    return this.write(() => {
      const meta = this.metaInTxn();
      const [doc] = this.select(filter, { sort: options.sort, limit: 1 });
      if (!doc) {
        if (!options.upsert) return null;
        const inserted = this.insertUpsert(filter, update, meta);
        return returnBefore ? null : (cloneValue(inserted) as T);
      }
      const next = applyUpdate(doc, update, false, { share: true });
      if (!deepEqual(doc, next)) this.putDoc(doc, cloneValue(next), meta);
      return (returnBefore ? doc : next) as T;
    });
  }

  async deleteOne(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(() => {
      const meta = this.metaInTxn();
      const [doc] = this.select(filter, { limit: 1 });
      if (!doc) return { deletedCount: 0 };
      this.removeDoc(doc, meta);
      return { deletedCount: 1 };
    });
  }

  async deleteMany(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(() => {
      const meta = this.metaInTxn();
      const docs = this.select(filter);
      for (const doc of docs) this.removeDoc(doc, meta);
      return { deletedCount: docs.length };
    });
  }

  /** Handles on this collection's trees that read segments of _ids from the keys (made on first use). */
  private segmentDbs: { docs: Database<Buffer, string>; index: Database<Buffer, string> } | undefined;

  /**
   * When the filter is exactly one range of keys (no document needs checking), the segments
   * are read from the keys: an index range from equality on its leading fields and at most an
   * inclusive range ($gte / $lte) of numbers or dates on the next (e.g. a kind's engagement
   * totals since a time), or an _id range of the documents tree. Otherwise pages of _ids.
   */
  async *findIdSegments(filter: Filter, segment: IdSegment, options: { batchSize?: number } = {}): AsyncIterable<string[]> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    if (segment.end !== undefined && segment.end.length !== 1) throw new Error("findIdSegments: end must be one character");
    const batchSize = options.batchSize ?? 5_000;
    const meta = this.metaCache;
    const plan = planQuery(filter, undefined, meta.indexes);
    const exact = PRINTABLE.test(segment.prefix) && (segment.end === undefined || PRINTABLE.test(segment.end)) ? exactRange(filter, plan, meta) : undefined;
    if (!exact) {
      yield* pagedIdSegments(this as unknown as Collection<Doc>, filter, segment, batchSize);
      return;
    }
    this.segmentDbs ??= {
      docs: this.store.openDb<Database<Buffer, string>>(`d:${this.name}`, { encoding: "binary", keyEncoder: segmentKeys }),
      index: this.store.openDb<Database<Buffer, string>>(`i:${this.name}`, { encoding: "binary", keyEncoder: segmentKeys }),
    };
    const db = plan.kind === "primary" ? this.segmentDbs.docs : this.segmentDbs.index;
    yield* segmentBatches(db, plan, segment, exact.excluded, batchSize);
  }

  async countDocuments(filter: Filter = {}): Promise<number> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    const meta = this.metaCache;
    if (Object.keys(filter).length === 0 && !meta.indexes.some((d) => d.ttl !== undefined)) return this.docs.getCount(); // (the structures entry is outside the counted key range)
    const plan = planQuery(filter, undefined, meta.indexes);
    const source: CountSource = { docs: this.docs, index: this.index, indexIds: (p) => this.indexIds(p) };
    const byIndex = countIndexEntries(source, filter, plan, meta) ?? countWildcardEntries(source, filter, plan, meta) ?? countIdEntries(source, filter, plan, meta);
    if (byIndex !== undefined) return byIndex;
    let n = 0;
    for (const _ of this.candidates(filter, plan, meta)) n++;
    return n;
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fields = Object.keys(spec.keys ?? {});
    if (fields.length === 0) throw new Error("createIndex needs at least one key");
    const wildcards = fields.filter(isWildcardField);
    if (wildcards.length > 0) {
      if (wildcards.length > 1 || !isWildcardField(fields[fields.length - 1]) || fields[fields.length - 1] === "$**") {
        throw new Error('a wildcard index takes one "<field>.$**" key, last');
      }
      if (spec.unique || spec.expireAfterSeconds !== undefined) throw new Error("a wildcard index cannot be unique or TTL");
    }
    if (spec.expireAfterSeconds !== undefined && fields.length !== 1) {
      throw new Error("a TTL index (expireAfterSeconds) takes exactly one field");
    }
    return this.write(() => this.addIndexInTxn(fields, spec));
  }

  /** Builds a new index over the existing documents (inside a write transaction). */
  addIndexInTxn(fields: string[], spec: Omit<IndexSpec, "keys">): void {
    const meta = this.metaInTxn();
    if (meta.indexes.some((d) => d.fields.join("\u0000") === fields.join("\u0000"))) return;
    const def: IndexDef = { no: meta.next, fields, unique: spec.unique === true, sparse: spec.sparse === true };
    if (fields[fields.length - 1] === "_id") def.idTail = true;
    def.compactTags = true;
    if (spec.expireAfterSeconds !== undefined) def.ttl = spec.expireAfterSeconds;
    const last = fields[fields.length - 1];
    if (isWildcardField(last)) {
      def.wildcard = last.slice(0, -".$**".length);
      def.multikey = true; // a document has an entry per value under the root
      def.sparse = false;
      delete def.idTail;
    }
    const now = Date.now();
    try {
      for (const { key, value: doc } of this.docs.getRange({})) {
        if (typeof key === "symbol") continue;
        doc._id = key;
        if (def.unique) this.checkUnique(doc, meta, now, def);
        const tuples = indexTuples(doc, def);
        if (tuples.length > 1 || def.fields.some((f) => valuesAt(doc, f.split(".")).some(Array.isArray))) def.multikey = true;
        for (const tuple of tuples) this.index.putSync(entryKey(def, tuple, doc._id), EMPTY);
      }
    } catch (err) {
      for (const key of [...this.index.getKeys({ start: [ixKey(def.no)], end: [ixKey(def.no + 1)] } as never)]) this.index.removeSync(key);
      throw err;
    }
    meta.indexes.push(def);
    meta.next++;
    this.store.meta.putSync(this.name, meta);
    this.metaCache = meta;
  }

  /** Deletes documents past their TTL (one transaction, at most `max`). */
  async sweepExpired(max = 10_000): Promise<number> {
    if (!this.metaCache.indexes.some((d) => d.ttl !== undefined)) return 0;
    return this.write(() => {
      const meta = this.metaInTxn();
      const now = Date.now();
      let removed = 0;
      for (const def of meta.indexes) {
        if (def.ttl === undefined) continue;
        const keys = [...this.index.getKeys({ start: [ixKey(def.no), tagChar(T_DATE, tagBase(def))], end: [ixKey(def.no), tagChar(T_DATE, tagBase(def)), now - def.ttl * 1000, HIGH], limit: max } as never)];
        for (const key of keys) {
          const doc = this.getDoc(entryId(key));
          if (doc && this.expired(doc, meta, now)) {
            this.removeDoc(doc, meta);
            removed++;
          }
        }
      }
      return removed;
    });
  }

  /** Replaces the collection's content with the documents of an old nedb datafile. */
  clearInTxn(): void {
    for (const key of [...this.index.getKeys({})]) this.index.removeSync(key);
    for (const key of [...this.docs.getKeys({})]) if (typeof key !== "symbol") this.docs.removeSync(key);
    this.store.meta.removeSync(this.name);
    this.metaCache = { next: 1, indexes: [] };
  }

  putRawInTxn(doc: Doc): void {
    this.putValue(doc);
  }

  removeRawInTxn(id: string): void {
    this.docs.removeSync(id);
  }
}
