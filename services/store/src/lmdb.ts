/**
 * Embedded store adapter on LMDB (the `lmdb` package: memory-mapped B+trees, ACID, crash-safe).
 *
 * One LMDB environment per service directory (<dir>/store.mdb). Each collection has two named
 * databases: `d:<name>` (documents by _id, msgpack with shared structures, LZ4-compressed, the
 * _id only in the key) and `i:<name>` (secondary index entries; key = [indexNo, ...encoded field
 * values, _id]; an index ending in _id holds it once). Index definitions live in the `meta`
 * database. Stores written by the first layout (documents holding their _id, uncompressed;
 * indexes repeating a trailing _id) are read as they are: see getDoc and IndexDef.idTail. Memory does not grow with the data: documents stay on disk
 * (in the page cache), reads walk the B+trees synchronously.
 *
 * Writes: every write operation runs as one lmdb-js asynchronous transaction callback. The
 * callback executes inside the single LMDB write transaction (reads in it see the latest data,
 * so read-modify-write sequences such as findOneAndUpdate and unique checks are atomic, also
 * against other processes using the same directory). lmdb-js batches all callbacks queued in
 * the same event turn into one commit (group commit), and a write's promise resolves only once
 * its transaction is committed, so every acknowledged write survives a process crash. Commits
 * are plain LMDB commits (`overlappingSync: false`): with lmdb-js's default overlapping sync, a
 * commit was visible and acknowledged before the meta pointers that recovery reads were all
 * written, and the crash test (a writer SIGKILLed mid-stream) lost its last acknowledged batch
 * about once in ten CI runs. Group commit keeps the cost out of sight: 10,900 acknowledged
 * writes/s from 8 concurrent writers against 10,100 with overlapping sync, here.
 *
 * Opening a directory another process is writing: the LMDB inside lmdb (3.5.6, mdb_env_open2)
 * records in the shared lock file, as the base of the next write transaction, the last commit it
 * read while opening, without taking the write lock (upstream LMDB fixed this as ITS#9496). When
 * the other process commits in between, its next transaction builds on the commit before and
 * overwrites the one it had acknowledged: the SIGKILL crash test lost 8 acknowledged writes (one
 * commit) this way when its reader opened the directory mid-stream, and a process opening the
 * directory 300 times beside a writer lost 2 or 3 commits. So no store transaction commits on
 * such a stale base (startedStale: its id is not above the last commit's): it writes nothing and
 * its writes run again once the base is fresh; and a process opening the directory checks right
 * away and opens it again while it left the base stale (openEnv). Writes wait for that, a few ms
 * (reads meanwhile see the commit before). Opened by other means (another LMDB tool, or a process
 * killed right after opening), the base stays stale until some process opens the directory
 * again: writes wait, then answer 503, but none overwrites an acknowledged one.
 *
 * Queries: matching and updates use query.ts (MongoDB semantics). A small planner picks the
 * _id (primary) tree or a secondary index from equality / $in / range conditions; candidates
 * are always re-checked with matchesFilter, so an index only has to deliver a superset. When
 * the chosen scan already yields the requested sort order, skip/limit stop the scan early;
 * otherwise only the matching documents are collected and sorted. A wildcard index
 * ({ workspaceId: 1, "properties.$**": 1 }) holds an entry per path and value under the
 * sub-document and answers equality, $in and ranges on any of its paths (IndexDef.wildcard).
 *
 * Layout (lmdb/): environment.ts (the environment, write transactions, LmdbStore), collection.ts
 * (a collection: reads and writes of the port), keys.ts (index definitions and key encoding,
 * wildcard paths included), planner.ts (planQuery), order.ts (sorting, projection),
 * index-batch.ts (insertMany's index entries), counting.ts (countDocuments from index entries),
 * segments.ts (findIdSegments from key bytes), migration.ts (old nedb datafiles).
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { COLLECTION_NAME, LmdbStore, type LmdbStoreOptions, guardCommitFailures } from "./lmdb/environment.js";
import { migrateNedbFile } from "./lmdb/migration.js";

export { LMDB_FILE, LmdbStore, type LmdbStoreOptions, type MigrationInfo, type StoreLogger } from "./lmdb/environment.js";
export type { IndexDef } from "./lmdb/keys.js";
export { planQuery, type Plan } from "./lmdb/planner.js";

/** Opens (creating if needed) the LMDB store of a directory, migrating old nedb datafiles once. */
export async function openLmdbStore(options: LmdbStoreOptions): Promise<LmdbStore> {
  guardCommitFailures();
  const store = new LmdbStore(options.dir, options);
  let files: string[] = [];
  try {
    files = (await readdir(options.dir)).filter((f) => f.endsWith(".db") && COLLECTION_NAME.test(f.slice(0, -3)));
  } catch {
    // no directory yet: nothing to migrate
  }
  for (const file of files) {
    const path = join(options.dir, file);
    if (!(await stat(path)).isFile()) continue;
    const info = await migrateNedbFile(store, path, file.slice(0, -3));
    (options.logger ?? { info: (m: string) => console.log(m) }).info(
      `store: migrated collection "${info.collection}" from nedb (${info.documents} documents, ${info.indexes} indexes, ${info.ms} ms); old file kept as ${info.movedTo}`,
    );
    options.onMigrate?.(info);
  }
  return store;
}
