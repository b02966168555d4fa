/** The index entries of an insertMany, put in together (see IndexBatch). */
import { compareKeys, type Database } from "lmdb";
import { type CollectionMeta, EMPTY, type IndexDef, entryKey, flatKey, ixKey } from "./keys.js";

/**
 * The index entries of an insertMany, put in together at the end. LMDB splits a full page in
 * the middle unless the new key goes at its end, so a run of ascending keys put into the middle
 * of an index (e.g. a list sorted by email) leaves every page it passes half empty. Put in random
 * order they leave pages about 70% full, as random keys do; appends (ids that only grow) keep
 * their order and pack pages full. Unique checks within the batch: a possible collision with a
 * waiting entry puts the waiting entries in first, so the ordinary check sees them.
 */
export class IndexBatch {
  private readonly entries = new Map<number, (string | number)[][]>();
  private readonly uniqueKeys = new Set<string>();

  add(meta: CollectionMeta, tuples: unknown[][][], id: string): void {
    meta.indexes.forEach((def, i) => {
      let list = this.entries.get(def.no);
      if (!list) this.entries.set(def.no, (list = []));
      for (const tuple of tuples[i]) {
        list.push(entryKey(def, tuple, id));
        if (def.unique) this.uniqueKeys.add(uniqueKey(def, tuple));
      }
    });
  }

  /** Whether a unique value of these tuples may already wait here (cut strings: may). */
  mayCollide(meta: CollectionMeta, tuples: unknown[][][]): boolean {
    if (this.uniqueKeys.size === 0) return false;
    return meta.indexes.some((def, i) => def.unique && tuples[i].some((tuple) => this.uniqueKeys.has(uniqueKey(def, tuple))));
  }

  flush(index: Database<Buffer, (string | number)[]>): void {
    for (const [no, keys] of this.entries) {
      let last: (string | number)[] | undefined;
      for (const key of index.getKeys({ start: [ixKey(no + 1)], end: [ixKey(no)], reverse: true, limit: 1 } as never)) last = key;
      let appends = last === undefined || compareKeys(keys[0], last) > 0;
      for (let i = 1; appends && i < keys.length; i++) appends = compareKeys(keys[i - 1], keys[i]) < 0;
      if (!appends) {
        for (let i = keys.length - 1; i > 0; i--) {
          const j = Math.floor(Math.random() * (i + 1));
          [keys[i], keys[j]] = [keys[j], keys[i]];
        }
      }
      for (const key of keys) index.putSync(key, EMPTY);
    }
    this.entries.clear();
    this.uniqueKeys.clear();
  }
}

const uniqueKey = (def: IndexDef, tuple: unknown[]): string => JSON.stringify(flatKey(def, tuple));
