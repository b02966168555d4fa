/**
 * The previous embedded store (before lmdb.ts), kept for openMemoryStore() (unit tests, in
 * memory), for tests that write a data directory the way older versions did (migration), and
 * as the baseline of `npm run bench store`. openStore() no longer uses it for files.
 *
 * Embedded store adapter: one @seald-io/nedb datafile per collection
 * (<dir>/<collection>.db), or purely in memory for unit tests.
 *
 * nedb keeps every document in memory and appends each change to the datafile; we compact
 * periodically and on close. Matching and update operators are evaluated by query.ts (MongoDB
 * semantics); nedb provides storage, indexes (unique, TTL) and sort/skip/limit/projection.
 * Every write on a collection runs under one async mutex, so read-modify-write sequences such
 * as findOneAndUpdate are atomic against all other writes in this process. One process owns
 * a data directory.
 */
import { join } from "node:path";
import nedbModule from "@seald-io/nedb";
import { closeAppendHandle, installPersistentAppends } from "./nedb-append.js";
import {
  DuplicateKeyError,
  type BulkWriteOperation,
  type BulkWriteResult,
  type Collection,
  type Doc,
  type Filter,
  type IdSegment,
  pagedIdSegments,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from "./port.js";
import {
  applyUpdate,
  assertDefinedFilter,
  cloneValue,
  deepEqual,
  isPlainObject,
  matchesFilter,
  newStoreId,
  upsertSeed,
  validateUpdate,
} from "./query.js";

export interface EmbeddedStoreOptions {
  /** Directory holding <collection>.db files; omit for an in-memory store. */
  dir?: string;
  /** How often datafiles are rewritten without superseded lines. Default 10 minutes. */
  compactionIntervalMs?: number;
}

// nedb is CommonJS (`module.exports = Datastore`) but typed as an ES default export.
type NedbClass = typeof nedbModule.default;
type Datastore = InstanceType<NedbClass>;
const Datastore: NedbClass = (nedbModule as unknown as { default?: NedbClass }).default ?? (nedbModule as unknown as NedbClass);

const COLLECTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** Serialises async critical sections (FIFO). */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<R>(fn: () => Promise<R>): Promise<R> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

function isUniqueViolation(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { errorType?: string }).errorType === "uniqueViolated";
}

/**
 * nedb only looks at the filter to pick candidates from an index; the real match is done by
 * matchesFilter through `$where`. We hand nedb just the conditions where its semantics equal
 * MongoDB's (primitive equality, $in of primitives, range on strings/numbers), so `_id`
 * lookups and cursor paging use the _id index instead of scanning.
 */
function nedbQuery(filter: Filter): Record<string, unknown> {
  const isPrimitive = (v: unknown) => typeof v === "string" || typeof v === "number" || typeof v === "boolean";
  const isRangeValue = (v: unknown) => typeof v === "string" || typeof v === "number";
  const query: Record<string, unknown> = {};
  for (const [key, condition] of Object.entries(filter)) {
    if (key.startsWith("$")) continue;
    if (isPrimitive(condition)) {
      query[key] = condition;
    } else if (isPlainObject(condition)) {
      const hint: Record<string, unknown> = {};
      for (const [op, arg] of Object.entries(condition)) {
        if (op === "$eq" && isPrimitive(arg)) query[key] = arg;
        else if (op === "$in" && Array.isArray(arg) && arg.every(isPrimitive)) hint.$in = arg;
        else if (["$gt", "$gte", "$lt", "$lte"].includes(op) && isRangeValue(arg)) hint[op] = arg;
      }
      if (!(key in query) && Object.keys(hint).length > 0) query[key] = hint;
    }
  }
  query.$where = function (this: Record<string, unknown>) {
    return matchesFilter(this, filter);
  };
  return query;
}

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  private readonly writes = new Mutex();

  constructor(
    private readonly name: string,
    private readonly db: Datastore,
    private readonly ready: Promise<void>,
    private readonly assertOpen: () => void,
  ) {}

  private duplicateKey(): DuplicateKeyError {
    return new DuplicateKeyError(`duplicate key in collection "${this.name}"`);
  }

  /** Runs a write under the collection mutex, mapping nedb's unique violations. */
  private async write<R>(fn: () => Promise<R>): Promise<R> {
    this.assertOpen();
    return this.writes.run(async () => {
      await this.ready;
      try {
        return await fn();
      } catch (err) {
        if (isUniqueViolation(err)) throw this.duplicateKey();
        throw err;
      }
    });
  }

  private async select(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    assertDefinedFilter(filter);
    await this.ready;
    let cursor = this.db.findAsync<T>(nedbQuery(filter));
    if (options.sort && Object.keys(options.sort).length > 0) cursor = cursor.sort(options.sort);
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit) cursor = cursor.limit(options.limit);
    const keys = Object.keys(options.projection ?? {});
    // `{ _id: 1 }` alone is the _id alone (MongoDB's meaning); nedb would keep every field.
    if (keys.length === 1 && options.projection!._id === 1) return ((await cursor) as T[]).map((d) => ({ _id: d._id }) as T);
    if (keys.length > 0) cursor = cursor.projection(options.projection!);
    return (await cursor) as unknown as T[];
  }

  private async replace(doc: T): Promise<void> {
    await this.db.updateAsync({ _id: doc._id }, doc, {});
  }

  private async insertUpsert(filter: Filter, update: Update): Promise<T> {
    const seed = upsertSeed(filter);
    const doc = applyUpdate(seed, update, true) as T;
    if (doc._id === undefined) (doc as Doc)._id = newStoreId();
    await this.db.insertAsync(doc);
    return doc;
  }

  async insertOne(doc: T): Promise<void> {
    return this.write(async () => {
      await this.db.insertAsync(cloneValue(doc));
    });
  }

  async insertMany(docs: T[]): Promise<void> {
    return this.write(async () => {
      if (docs.length === 0) return;
      const copies = docs.map((d) => cloneValue(d));
      try {
        await this.db.insertAsync(copies); // all-or-nothing in nedb
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // Match MongoDB's ordered insertMany: keep the documents before the first duplicate.
        for (const copy of copies) await this.db.insertAsync(copy);
      }
    });
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    this.assertOpen();
    const [doc] = await this.select(filter, { ...options, limit: 1 });
    return doc ?? null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    this.assertOpen();
    return this.select(filter, options);
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.updateMatching(filter, update, { upsert: options.upsert === true, multi: false });
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.updateMatching(filter, update, { upsert: false, multi: true });
  }

  private async updateMatching(filter: Filter, update: Update, how: { upsert: boolean; multi: boolean }): Promise<UpdateResult> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    return this.write(() => this.updateInLock(filter, update, how));
  }

  /** In order under one hold of the mutex (nedb has no transactions: each operation is applied as it runs). */
  async bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult> {
    for (const op of operations) {
      if ("updateOne" in op) {
        validateUpdate(op.updateOne.update);
        assertDefinedFilter(op.updateOne.filter);
      }
    }
    const result: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
    await this.write(async () => {
      for (const [i, op] of operations.entries()) {
        if ("insertOne" in op) {
          await this.db.insertAsync(cloneValue(op.insertOne.document));
          result.insertedCount++;
          continue;
        }
        const r = await this.updateInLock(op.updateOne.filter, op.updateOne.update, { upsert: op.updateOne.upsert === true, multi: false });
        result.matchedCount += r.matchedCount;
        result.modifiedCount += r.modifiedCount;
        if (r.upsertedId !== undefined) {
          result.upsertedCount++;
          result.upsertedIds[i] = r.upsertedId;
        }
      }
    });
    return result;
  }

  private async updateInLock(filter: Filter, update: Update, how: { upsert: boolean; multi: boolean }): Promise<UpdateResult> {
    const matched = await this.select(filter, how.multi ? {} : { limit: 1 });
    if (matched.length === 0) {
      if (!how.upsert) return { matchedCount: 0, modifiedCount: 0 };
      const inserted = await this.insertUpsert(filter, update);
      return { matchedCount: 0, modifiedCount: 0, upsertedId: inserted._id };
    }
    let modifiedCount = 0;
    for (const doc of matched) {
      const next = applyUpdate(doc, update, false);
      if (deepEqual(doc, next)) continue;
      await this.replace(next);
      modifiedCount++;
    }
    return { matchedCount: matched.length, modifiedCount };
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    const returnBefore = options.returnDocument === "before";
    return this.write(async () => {
      const [doc] = await this.select(filter, { sort: options.sort, limit: 1 });
      if (!doc) {
        if (!options.upsert) return null;
        const inserted = await this.insertUpsert(filter, update);
        return returnBefore ? null : cloneValue(inserted);
      }
      const next = applyUpdate(doc, update, false);
      if (!deepEqual(doc, next)) await this.replace(next);
      return returnBefore ? doc : next;
    });
  }

  async deleteOne(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(async () => {
      const [doc] = await this.select(filter, { limit: 1 });
      if (!doc) return { deletedCount: 0 };
      return { deletedCount: await this.db.removeAsync({ _id: doc._id }, {}) };
    });
  }

  async deleteMany(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(async () => ({ deletedCount: await this.db.removeAsync(nedbQuery(filter), { multi: true }) }));
  }

  findIdSegments(filter: Filter, segment: IdSegment, options: { batchSize?: number } = {}): AsyncIterable<string[]> {
    return pagedIdSegments(this, filter, segment, options.batchSize);
  }

  async countDocuments(filter: Filter = {}): Promise<number> {
    this.assertOpen();
    assertDefinedFilter(filter);
    await this.ready;
    return (await this.db.countAsync(nedbQuery(filter))) as unknown as number;
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fields = Object.keys(spec.keys ?? {});
    if (fields.length === 0) throw new Error("createIndex needs at least one key");
    if (spec.expireAfterSeconds !== undefined && fields.length !== 1) {
      throw new Error("a TTL index (expireAfterSeconds) takes exactly one field");
    }
    // A wildcard index ({ ..., "<field>.$**": 1 }) only speeds queries up: nedb has none, and
    // every query is matched by matchesFilter anyway.
    if (fields.some((f) => f === "$**" || f.endsWith(".$**"))) {
      if (spec.unique || spec.expireAfterSeconds !== undefined) throw new Error("a wildcard index cannot be unique or TTL");
      return this.write(async () => undefined);
    }
    return this.write(() =>
      this.db.ensureIndexAsync({
        fieldName: fields.length === 1 ? fields[0] : fields,
        unique: spec.unique === true,
        sparse: spec.sparse === true,
        expireAfterSeconds: spec.expireAfterSeconds,
      }),
    );
  }

  /** Rewrites the datafile without superseded lines (after pending writes). */
  async compact(): Promise<void> {
    return this.writes.run(async () => {
      await this.ready;
      await this.db.compactDatafileAsync();
    });
  }
}

class EmbeddedStore implements Store {
  readonly kind = "embedded";
  private readonly collections = new Map<string, EmbeddedCollection<Doc>>();
  private readonly timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: EmbeddedStoreOptions) {
    if (options.dir) {
      installPersistentAppends();
      this.timer = setInterval(() => void this.compactAll().catch(() => undefined), options.compactionIntervalMs ?? 600_000);
      this.timer.unref(); // never keeps a process (or a test worker) alive
    }
  }

  collection<T extends Doc>(name: string): Collection<T> {
    if (!COLLECTION_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    this.assertOpen();
    let collection = this.collections.get(name);
    if (!collection) {
      const db = this.options.dir
        ? new Datastore({ filename: join(this.options.dir, `${name}.db`) })
        : new Datastore({ inMemoryOnly: true });
      const ready = db.loadDatabaseAsync();
      ready.catch(() => undefined); // surfaced by the first operation that awaits it
      collection = new EmbeddedCollection<Doc>(name, db, ready, () => this.assertOpen());
      this.collections.set(name, collection);
    }
    return collection as unknown as Collection<T>;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("store is closed");
  }

  private async compactAll(): Promise<void> {
    for (const collection of this.collections.values()) await collection.compact();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    if (this.options.dir) {
      await this.compactAll();
      for (const name of this.collections.keys()) await closeAppendHandle(join(this.options.dir, `${name}.db`));
    }
    this.closed = true;
  }
}

export function createEmbeddedStore(options: EmbeddedStoreOptions = {}): Store {
  return new EmbeddedStore(options);
}
