/**
 * The store port: a small subset of the MongoDB collection API that every service's
 * repositories are written against. Two adapters implement it: MongoDB (production)
 * and an embedded file store (single machine, CI). Filters and updates use MongoDB
 * syntax; only the operators listed here are guaranteed on both adapters.
 *
 * Filter operators: equality, $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $or, $and.
 * Update operators: $set, $unset, $inc, $push, $setOnInsert.
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
  keys: Record<string, 1 | -1>;
  unique?: boolean;
  /** Index only documents that have the field (e.g. a unique key that is optional). */
  sparse?: boolean;
  /** Documents expire this many seconds after the date in the (single) indexed field. */
  expireAfterSeconds?: number;
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
  createIndex(spec: IndexSpec): Promise<void>;
}

export interface Store {
  /** "mongodb" or "embedded". */
  readonly kind: string;
  collection<T extends Doc>(name: string): Collection<T>;
  close(): Promise<void>;
}
