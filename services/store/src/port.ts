/**
 * The store port: a small subset of the MongoDB collection API that every service's
 * repositories are written against. Adapters: MongoDB (production), the embedded LMDB
 * store (lmdb.ts: single machine, on disk) and nedb in memory (nedb-legacy.ts: unit tests).
 * Filters and updates use MongoDB syntax; only the operators listed here are guaranteed on
 * every adapter.
 *
 * Filter operators: equality, $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $or, $and.
 * Update operators: $set, $unset, $inc, $push, $setOnInsert, $addToSet, $pull, $max, $min.
 *   $max / $min: `{ field: value }` sets the field when it is missing (or null) or the value is
 *   larger / smaller than the one held; numbers, strings and dates, each compared with its own
 *   kind (a value of another kind than the field's is refused).
 *   $addToSet: `{ field: value }` or `{ field: { $each: [values] } }` appends each value the
 *   array does not hold yet (deep equality; creates the array when the field is missing).
 *   $pull: `{ field: value }` removes the elements equal to the value, `{ field: { $in: [values] } }`
 *   those equal to any of them (other field operators work too, as a condition on each element);
 *   a missing field stays missing. Both refuse a field holding a non-array value.
 * Also on both: $nor, $regex (+ $options), $push with { $each, $slice }, sparse indexes.
 * Anything else is rejected by both adapters, as is `undefined` as a filter value.
 */
export type Doc = { _id: string } & Record<string, unknown>;

export type Filter = Record<string, unknown>;
export type Update = {
  $set?: Record<string, unknown>;
  $unset?: Record<string, unknown>;
  $inc?: Record<string, number>;
  $push?: Record<string, unknown>;
  $setOnInsert?: Record<string, unknown>;
  $addToSet?: Record<string, unknown>;
  $pull?: Record<string, unknown>;
  $max?: Record<string, unknown>;
  $min?: Record<string, unknown>;
};
export type Sort = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: Sort;
  limit?: number;
  skip?: number;
  projection?: Record<string, 0 | 1>;
}

export interface UpdateOptions {
  upsert?: boolean;
}

export interface FindOneAndUpdateOptions extends UpdateOptions {
  /** Default "after". */
  returnDocument?: "before" | "after";
  sort?: Sort;
}

export interface UpdateResult {
  matchedCount: number;
  modifiedCount: number;
  upsertedId?: string;
}

export interface IndexSpec {
  /**
   * Fields in order. The last may be a wildcard, MongoDB's `"<field>.$**"` (e.g.
   * `{ workspaceId: 1, "properties.$**": 1 }`): every path under that sub-document with its
   * values (each element of an array), for equality, $in and range conditions on
   * `<field>.<path>` with equality on the fields before it. Not unique, not TTL. MongoDB
   * (7+) builds it natively, the embedded store keeps such entries, the in-memory store
   * ignores it (same answers, no index).
   */
  keys: Record<string, 1 | -1>;
  unique?: boolean;
  /** Index only documents that have the field (e.g. a unique key that is optional). */
  sparse?: boolean;
  /** Documents expire this many seconds after the date in the (single) indexed field. */
  expireAfterSeconds?: number;
}

/**
 * One operation of a bulkWrite (MongoDB's shapes): insert a document, or update the first
 * document matching a filter (with `upsert`, insert one if none matches).
 */
export type BulkWriteOperation<T extends Doc> =
  | { insertOne: { document: T } }
  | { updateOne: { filter: Filter; update: Update; upsert?: boolean } };

export interface BulkWriteResult {
  insertedCount: number;
  matchedCount: number;
  modifiedCount: number;
  upsertedCount: number;
  /** _id of each upserted document by the index of its operation. */
  upsertedIds: Record<number, string>;
}

/** Which part of each _id findIdSegments answers. */
export interface IdSegment {
  prefix: string;
  /** One character: the segment ends before its first occurrence after the prefix. */
  end?: string;
}

/** The segment of `id` findIdSegments answers, or undefined when `id` does not start with the prefix. */
export function idSegment(id: string, segment: IdSegment): string | undefined {
  if (!id.startsWith(segment.prefix)) return undefined;
  const to = segment.end === undefined ? -1 : id.indexOf(segment.end, segment.prefix.length);
  return id.slice(segment.prefix.length, to < 0 ? id.length : to);
}

/**
 * findIdSegments over `find`: pages of _ids in _id order. A segment is copied out of its _id
 * (a slice would keep the whole _id alive: twice the memory for every segment held).
 */
export async function* pagedIdSegments(
  coll: Pick<Collection<Doc>, "find">, filter: Filter, segment: IdSegment, batchSize = 5_000,
): AsyncIterable<string[]> {
  let after: string | undefined;
  for (;;) {
    const page = await coll.find(after === undefined ? filter : { $and: [filter, { _id: { $gt: after } }] }, {
      sort: { _id: 1 }, limit: batchSize, projection: { _id: 1 },
    });
    const out: string[] = [];
    for (const doc of page) {
      const part = idSegment(doc._id, segment);
      if (part !== undefined) out.push(Buffer.from(part, "utf8").toString("utf8"));
    }
    if (out.length) yield out;
    if (page.length < batchSize) return;
    after = page[page.length - 1]._id;
  }
}

/** Thrown by insertOne/updateOne/upserts that would break a unique index. */
export class DuplicateKeyError extends Error {
  constructor(message = "duplicate key") {
    super(message);
    this.name = "DuplicateKeyError";
  }
}

export interface Collection<T extends Doc> {
  insertOne(doc: T): Promise<void>;
  insertMany(docs: T[]): Promise<void>;
  findOne(filter: Filter, options?: FindOptions): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  updateOne(filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>;
  updateMany(filter: Filter, update: Update): Promise<UpdateResult>;
  /** Atomic: the compare-and-set primitive for state changes that race. */
  findOneAndUpdate(filter: Filter, update: Update, options?: FindOneAndUpdateOptions): Promise<T | null>;
  deleteOne(filter: Filter): Promise<{ deletedCount: number }>;
  deleteMany(filter: Filter): Promise<{ deletedCount: number }>;
  countDocuments(filter?: Filter): Promise<number>;
  /**
   * A segment of the _id of every document matching `filter`, in batches, in no particular
   * order: the part after `prefix` (an _id that does not start with it is left out), up to the
   * first `end` character after it when given (else to the end). For reading many ids at once
   * (the contacts an engagement condition names: hundreds of thousands): the embedded store
   * answers from index keys without decoding them when the filter is exactly one index range.
   */
  findIdSegments(filter: Filter, segment: IdSegment, options?: { batchSize?: number }): AsyncIterable<string[]>;
  createIndex(spec: IndexSpec): Promise<void>;
  /**
   * Runs the operations in order, like MongoDB's ordered bulkWrite: on an error (e.g. a
   * DuplicateKeyError) the operations before it stay applied and the rest are not run. The
   * embedded store commits the whole batch in one transaction (one disk flush for all).
   */
  bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult>;
}

export interface Store {
  /** "mongodb" or "embedded". */
  readonly kind: string;
  collection<T extends Doc>(name: string): Collection<T>;
  close(): Promise<void>;
}
