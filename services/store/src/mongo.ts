/**
 * MongoDB store adapter (official driver v6). One database per service: `mailroom_<service>`.
 * Filters and updates pass through unchanged; we only add what keeps both adapters alike:
 * E11000 -> DuplicateKeyError, `undefined` filter values rejected (the driver would drop them
 * and match everything), and string `_id`s for upserts whose filter pins none.
 */
import {
  MongoClient,
  type Collection as MongoCollection,
  type Document,
  type Filter as MongoFilter,
  type UpdateFilter,
} from "mongodb";
import {
  DuplicateKeyError,
  type BulkWriteOperation,
  type BulkWriteResult,
  type Collection,
  type Doc,
  type Filter,
  type IdSegment,
  idSegment,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type IndexSpec,
  type Store,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from "./port.js";
import { assertDefinedFilter, equalityId, newStoreId, validateUpdate } from "./query.js";

export interface MongoStoreOptions {
  url: string;
  service: string;
  /** Overrides the database name (tests). Default `mailroom_<service>`. */
  dbName?: string;
}

function isDuplicateKey(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; writeErrors?: Array<{ code?: unknown }> };
  return e.code === 11000 || (Array.isArray(e.writeErrors) && e.writeErrors.some((w) => w.code === 11000));
}

/** Upserts get a string `_id` (like the embedded adapter) instead of an ObjectId. */
function withStringIdOnInsert(filter: Filter, update: Update, upsert: boolean | undefined): Update {
  validateUpdate(update); // same operator subset and checks as the embedded adapter
  if (!upsert || equalityId(filter) !== undefined || update.$set?._id !== undefined || update.$setOnInsert?._id !== undefined) {
    return update;
  }
  return { ...update, $setOnInsert: { ...update.$setOnInsert, _id: newStoreId() } };
}

class MongoStoreCollection<T extends Doc> implements Collection<T> {
  constructor(private readonly coll: MongoCollection<Document>) {}

  private async guard<R>(fn: () => Promise<R>): Promise<R> {
    try {
      return await fn();
    } catch (err) {
      if (isDuplicateKey(err)) throw new DuplicateKeyError(`duplicate key in collection "${this.coll.collectionName}"`);
      throw err;
    }
  }

  private filter(filter: Filter): MongoFilter<Document> {
    assertDefinedFilter(filter);
    return filter as MongoFilter<Document>;
  }

  insertOne(doc: T): Promise<void> {
    return this.guard(async () => {
      await this.coll.insertOne({ ...doc } as Document);
    });
  }

  insertMany(docs: T[]): Promise<void> {
    return this.guard(async () => {
      if (docs.length === 0) return;
      await this.coll.insertMany(docs.map((d) => ({ ...d }) as Document), { ordered: true });
    });
  }

  findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    return this.guard(async () => (await this.coll.findOne(this.filter(filter), options)) as T | null);
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return this.guard(async () => (await this.coll.find(this.filter(filter), options).toArray()) as unknown as T[]);
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.guard(async () => {
      const result = await this.coll.updateOne(
        this.filter(filter),
        withStringIdOnInsert(filter, update, options.upsert) as UpdateFilter<Document>,
        { upsert: options.upsert === true },
      );
      return {
        matchedCount: result.matchedCount,
        modifiedCount: result.modifiedCount,
        ...(result.upsertedId != null ? { upsertedId: String(result.upsertedId) } : {}),
      };
    });
  }

  bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult> {
    return this.guard(async () => {
      const empty: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
      if (operations.length === 0) return empty;
      const ops = operations.map((op) => {
        if ("insertOne" in op) return { insertOne: { document: { ...op.insertOne.document } as Document } };
        const { filter, update, upsert } = op.updateOne;
        return {
          updateOne: {
            filter: this.filter(filter),
            update: withStringIdOnInsert(filter, update, upsert) as UpdateFilter<Document>,
            upsert: upsert === true,
          },
        };
      });
      const result = await this.coll.bulkWrite(ops, { ordered: true });
      const upsertedIds: Record<number, string> = {};
      for (const [i, id] of Object.entries(result.upsertedIds)) upsertedIds[Number(i)] = String(id);
      return {
        insertedCount: result.insertedCount,
        matchedCount: result.matchedCount,
        modifiedCount: result.modifiedCount,
        upsertedCount: result.upsertedCount,
        upsertedIds,
      };
    });
  }

  updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.guard(async () => {
      validateUpdate(update);
      const result = await this.coll.updateMany(this.filter(filter), update as UpdateFilter<Document>);
      return { matchedCount: result.matchedCount, modifiedCount: result.modifiedCount };
    });
  }

  findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    return this.guard(async () => {
      const doc = await this.coll.findOneAndUpdate(
        this.filter(filter),
        withStringIdOnInsert(filter, update, options.upsert) as UpdateFilter<Document>,
        {
          returnDocument: options.returnDocument ?? "after",
          upsert: options.upsert === true,
          ...(options.sort ? { sort: options.sort } : {}),
          includeResultMetadata: false,
        },
      );
      return doc as T | null;
    });
  }

  deleteOne(filter: Filter): Promise<{ deletedCount: number }> {
    return this.guard(async () => ({ deletedCount: (await this.coll.deleteOne(this.filter(filter))).deletedCount }));
  }

  deleteMany(filter: Filter): Promise<{ deletedCount: number }> {
    return this.guard(async () => ({ deletedCount: (await this.coll.deleteMany(this.filter(filter))).deletedCount }));
  }

  async *findIdSegments(filter: Filter, segment: IdSegment, options: { batchSize?: number } = {}): AsyncIterable<string[]> {
    const batchSize = options.batchSize ?? 5_000;
    const cursor = this.coll.find(this.filter(filter), { projection: { _id: 1 } }).batchSize(batchSize);
    let out: string[] = [];
    try {
      for await (const doc of cursor) {
        const part = idSegment(String(doc._id), segment);
        if (part !== undefined) out.push(part);
        if (out.length >= batchSize) {
          yield out;
          out = [];
        }
      }
    } finally {
      await cursor.close();
    }
    if (out.length) yield out;
  }

  countDocuments(filter: Filter = {}): Promise<number> {
    return this.guard(() => this.coll.countDocuments(this.filter(filter)));
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fields = Object.keys(spec.keys ?? {});
    if (fields.length === 0) throw new Error("createIndex needs at least one key");
    if (spec.expireAfterSeconds !== undefined && fields.length !== 1) {
      throw new Error("a TTL index (expireAfterSeconds) takes exactly one field");
    }
    return this.guard(async () => {
      await this.coll.createIndex(spec.keys, {
        ...(spec.unique ? { unique: true } : {}),
        ...(spec.sparse ? { sparse: true } : {}),
        ...(spec.expireAfterSeconds !== undefined ? { expireAfterSeconds: spec.expireAfterSeconds } : {}),
      });
    });
  }
}

export async function openMongoStore(options: MongoStoreOptions): Promise<Store> {
  // ignoreUndefined: an undefined field is absent, as in the embedded store (not null).
  const client = new MongoClient(options.url, { ignoreUndefined: true, serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  const db = client.db(options.dbName ?? `mailroom_${options.service}`);
  const collections = new Map<string, MongoStoreCollection<Doc>>();
  return {
    kind: "mongodb",
    collection<T extends Doc>(name: string): Collection<T> {
      let collection = collections.get(name);
      if (!collection) {
        collection = new MongoStoreCollection<Doc>(db.collection(name));
        collections.set(name, collection);
      }
      return collection as unknown as Collection<T>;
    },
    close: () => client.close(),
  };
}

/** Whether the server has this database with at least one collection (a unit's store that exists already). */
export async function mongoDatabaseExists(url: string, dbName: string): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  try {
    return (await client.db(dbName).listCollections({}, { nameOnly: true }).toArray()).length > 0;
  } finally {
    await client.close().catch(() => undefined);
  }
}
