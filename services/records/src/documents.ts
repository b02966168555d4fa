import { DuplicateKeyError, type Collection, type Doc, type Filter, type Update } from "@mailroom/store/port.js";

/** Helpers the store repositories share. */

/** A domain record as a store document. */
export type Stored<T> = T & Doc;

export const asDoc = <T extends { _id: string }>(record: T): Stored<T> => record as Stored<T>;

/** insertOne that answers false instead of throwing when a unique index refuses it. */
export async function insertUnique<T extends Doc>(collection: Collection<T>, doc: T): Promise<boolean> {
  try {
    await collection.insertOne(doc);
    return true;
  } catch (err) {
    if (err instanceof DuplicateKeyError) return false;
    throw err;
  }
}

/**
 * An insert-if-missing upsert. Two concurrent upserts of the same id can both miss and
 * race to insert (MongoDB reports E11000 for the loser); the document exists either way.
 */
export async function ensureDoc<T extends Doc>(collection: Collection<T>, filter: Filter, update: Update): Promise<void> {
  try {
    await collection.updateOne(filter, update, { upsert: true });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
}

/** Everything of a document but its id, for $setOnInsert. */
export function withoutId<T extends { _id: string }>(record: T): Record<string, unknown> {
  const { _id, ...rest } = record;
  return rest;
}
