import { DuplicateKeyError, type Doc, type Store } from "@mailroom/store/port.js";

/**
 * Before the accounts and audience units there was one unit, the directory, with one store
 * (<dataDir>/directory/, schema or database `mailroom_directory`). On its first start each new
 * unit copies its own collections out of that store into its own, so a data dir or database
 * written before the split keeps working. The old store's records are read, never changed (an
 * operator can go back to the previous release, or delete it once satisfied; reading an
 * embedded store may leave it an empty collection it was asked for).
 *
 * Copying is idempotent (each document is upserted by _id, in _id order, in batches), so a
 * start cut short copies again from the beginning; a marker in the unit's own store, written
 * last, ends it for good.
 */
export const PRE_SPLIT_UNIT = "directory";
export const ADOPTION_COLLECTION = "_adopted_stores";
const BATCH = 1_000;

interface AdoptionMarker extends Doc {
  at: Date;
  /** Documents copied per collection (absent: there was no store to adopt). */
  copied?: Record<string, number>;
}

export interface AdoptionLogger {
  info(obj: object, msg: string): void;
}

/**
 * Copies `collections` from `openSource()` (the pre-split store, or null when there is none)
 * into `target` once. Answers the documents copied per collection, or null when the store was
 * adopted by an earlier start.
 */
export async function adoptPreSplitStore(opts: {
  target: Store;
  openSource: () => Promise<Store | null>;
  collections: readonly string[];
  logger: AdoptionLogger;
}): Promise<Record<string, number> | null> {
  const markers = opts.target.collection<AdoptionMarker>(ADOPTION_COLLECTION);
  if (await markers.findOne({ _id: PRE_SPLIT_UNIT })) return null;
  const source = await opts.openSource();
  if (!source) {
    await markers.insertOne({ _id: PRE_SPLIT_UNIT, at: new Date() });
    return {};
  }
  const copied: Record<string, number> = {};
  try {
    for (const name of opts.collections) copied[name] = await copyCollection(source, opts.target, name);
  } finally {
    await source.close();
  }
  await markers.insertOne({ _id: PRE_SPLIT_UNIT, at: new Date(), copied });
  const total = Object.values(copied).reduce((a, b) => a + b, 0);
  if (total) opts.logger.info({ copied }, `adopted ${total} documents from the ${PRE_SPLIT_UNIT} store written before the split (it is left as it was)`);
  return copied;
}

async function copyCollection(source: Store, target: Store, name: string): Promise<number> {
  const from = source.collection<Doc>(name);
  const to = target.collection<Doc>(name);
  let after: string | undefined;
  let count = 0;
  for (;;) {
    const page = await from.find(after === undefined ? {} : { _id: { $gt: after } }, { sort: { _id: 1 }, limit: BATCH });
    if (!page.length) return count;
    const withFields = page.filter((doc) => Object.keys(doc).length > 1);
    if (withFields.length) await to.bulkWrite(withFields.map(({ _id, ...fields }) => ({ updateOne: { filter: { _id }, update: { $set: fields }, upsert: true } })));
    // A document that is only an _id (a marker) cannot be $set: inserted unless there.
    for (const doc of page.filter((d) => Object.keys(d).length === 1)) {
      await to.insertOne({ _id: doc._id }).catch((err) => {
        if (!(err instanceof DuplicateKeyError)) throw err;
      });
    }
    count += page.length;
    after = page[page.length - 1]._id;
    if (page.length < BATCH) return count;
  }
}
