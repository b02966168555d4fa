/**
 * Copies one unit's embedded store into another store (PostgreSQL) through the store port:
 * every collection, every document in _id order, in batches, resumable.
 *
 * Resume: the target keeps, per collection, the last _id copied (PROGRESS_COLLECTION, in the
 * unit's own schema, so the record travels with the data it describes). It is written after each
 * batch, so a run killed at any point left at most the batch in flight beyond it: a later run
 * reads on after that _id and, in a collection it had started, first deletes each batch's _ids
 * in the target (whatever part of it got written) before inserting the batch.
 */
import type { LmdbStore } from "@mailroom/store/lmdb.js";
import type { Doc, Store } from "@mailroom/store/port.js";

export const PROGRESS_COLLECTION = "_copy_progress";

interface ProgressDoc extends Doc {
  /** The last _id copied; null before the first batch. */
  after: string | null;
  /** Documents copied so far (the target holds exactly these). */
  copied: number;
  done: boolean;
  updatedAt: Date;
}

export interface CollectionPlan {
  name: string;
  /** Documents in the source. */
  total: number;
  /** An earlier run's record; undefined when no run started this collection. */
  progress?: ProgressDoc;
}

export interface UnitPlan {
  unit: string;
  source: LmdbStore;
  target: Store;
  collections: CollectionPlan[];
}

export interface CollectionResult {
  name: string;
  /** Documents the target holds when done. */
  documents: number;
  /** Of those, copied by this run. */
  copied: number;
  /** Finished by an earlier run: nothing read or written. */
  alreadyDone: boolean;
  /** Continued after this _id of an earlier run ("" for one stopped before its first batch). */
  resumedAfter?: string;
}

/** What each of the unit's collections holds and how far earlier runs got. */
export async function planUnit(unit: string, source: LmdbStore, target: Store): Promise<UnitPlan> {
  const records = await target.collection<ProgressDoc>(PROGRESS_COLLECTION).find({});
  const progress = new Map(records.map((p) => [p._id, p]));
  const collections: CollectionPlan[] = [];
  for (const name of source.collectionNames()) {
    if (name === PROGRESS_COLLECTION) continue;
    // A table no run of ours started must be empty: else its rows (the units already running on
    // PostgreSQL?) would mix with the copy, which could not end with exactly the source's documents.
    if (!progress.has(name) && (await target.collection(name).countDocuments({})) > 0) {
      throw new Error(`the target's ${unit}.${name} already holds documents this command did not copy; copy into an empty database`);
    }
    collections.push({ name, total: await source.collection(name).countDocuments({}), progress: progress.get(name) });
  }
  return { unit, source, target, collections };
}

export async function copyCollection(
  plan: UnitPlan, c: CollectionPlan, batchSize: number, onBatch: (documents: number) => void,
): Promise<CollectionResult> {
  if (c.progress?.done) return { name: c.name, documents: c.progress.copied, copied: 0, alreadyDone: true };
  const progress = plan.target.collection<ProgressDoc>(PROGRESS_COLLECTION);
  // Recorded before the first write: a run that stops in the first batch is resumed, not refused as "not empty".
  if (!c.progress) await progress.insertOne({ _id: c.name, after: null, copied: 0, done: false, updatedAt: new Date() });
  const resumed = c.progress !== undefined;
  const source = plan.source.collection<Doc>(c.name);
  const target = plan.target.collection<Doc>(c.name);
  let after = c.progress?.after ?? null;
  let documents = c.progress?.copied ?? 0;
  let copied = 0;
  for (;;) {
    const batch = await source.find(after === null ? {} : { _id: { $gt: after } }, { sort: { _id: 1 }, limit: batchSize });
    if (batch.length === 0) break;
    // By _id, not by an _id range: the target may order text by another collation than the source.
    if (resumed) await target.deleteMany({ _id: { $in: batch.map((d) => d._id) } });
    await target.insertMany(batch);
    after = batch[batch.length - 1]._id;
    documents += batch.length;
    copied += batch.length;
    await progress.updateOne({ _id: c.name }, { $set: { after, copied: documents, updatedAt: new Date() } });
    onBatch(batch.length);
    if (batch.length < batchSize) break;
  }
  await progress.updateOne({ _id: c.name }, { $set: { done: true, updatedAt: new Date() } });
  return { name: c.name, documents, copied, alreadyDone: false, ...(resumed ? { resumedAfter: c.progress!.after ?? "" } : {}) };
}
