/**
 * The LMDB environment (<dir>/store.mdb): opening it, write transactions (group commit, stale
 * bases, disk faults) and the collections it holds. See ../lmdb.ts for the whole design.
 */
import { join } from "node:path";
import { ABORT, open, type Database, type RootDatabase } from "lmdb";
import { unavailable } from "@mailroom/kit/errors.js";
import type { Collection, Doc, Store } from "../port.js";
import { LmdbCollection } from "./collection.js";

export interface StoreLogger {
  info(message: string): void;
}

export interface MigrationInfo {
  collection: string;
  documents: number;
  indexes: number;
  from: string;
  movedTo: string;
  ms: number;
}

export interface LmdbStoreOptions {
  /** Directory of the service's store; the environment is <dir>/store.mdb. */
  dir: string;
  /** Where the one-line migration notice goes (default: console). */
  logger?: StoreLogger;
  /** Called once per collection migrated from the old nedb datafiles. */
  onMigrate?: (info: MigrationInfo) => void;
  /** How often expired (TTL) documents are deleted. Default 60 s. */
  ttlSweepIntervalMs?: number;
  /** Address space reserved for the memory map (not disk, not memory). Default 64 GiB; grows if needed. */
  mapSizeBytes?: number;
}

const DEFAULT_MAP_SIZE = 64 * 1024 ** 3;

export const LMDB_FILE = "store.mdb";
export const COLLECTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

type Result<R> = { ok: R } | { err: unknown };

/** errno values of a disk that cannot take a write right now: EIO, EACCES, ENOSPC, EROFS, EDQUOT. */
const UNWRITABLE_DISK = new Set([5, 13, 28, 30, 122, "EIO", "EACCES", "ENOSPC", "EROFS", "EDQUOT"]);

/**
 * A commit the disk refused (full, read-only, I/O error) is an outage the caller may retry
 * (503), not an internal error. lmdb also leaves the cause in a rejected `commitError`
 * promise that would crash the process as an unhandled rejection: it is handled here.
 */
function storageFault(err: unknown): unknown {
  const e = err as { commitError?: Promise<unknown>; code?: unknown } | undefined;
  const commitFailed = typeof e?.commitError?.catch === "function";
  if (commitFailed) e!.commitError!.catch(() => undefined);
  if (!commitFailed && !UNWRITABLE_DISK.has(e?.code as never)) return err;
  return unavailable("service_unavailable", "The store cannot write right now (disk full or unwritable); retry shortly");
}

/**
 * When a commit fails, lmdb rejects internal promises of the batch that no caller holds,
 * besides the one write() catches: without this, a full disk crashes the process as an
 * unhandled rejection instead of answering 503. Only lmdb's commit failures (they carry
 * `commitError`) are swallowed; anything else is rethrown, as Node's default would crash.
 */
let commitFailureGuard = false;
export function guardCommitFailures(): void {
  if (commitFailureGuard) return;
  commitFailureGuard = true;
  process.on("unhandledRejection", (reason) => {
    if (reason && typeof reason === "object" && "commitError" in reason) {
      storageFault(reason);
      return;
    }
    // Another listener (a test runner, a service's own) handles the rest; alone, behave as Node would.
    if (process.listenerCount("unhandledRejection") === 1) throw reason;
  });
}

/** A write transaction callback that found its transaction stale (see startedStale): it wrote nothing. */
const STALE = Symbol("stale write transaction");
/** How long a write waits for a stale base to be repaired (see the header) before it answers 503. */
const STALE_WAIT_MS = 10_000;
/** The same for creating a database (openDb), which waits blocking the event loop. */
const STALE_SYNC_WAIT_MS = 1_000;

/**
 * Inside a write transaction: it builds on an older commit than the last one, so committing it
 * would overwrite that commit (see the header). A transaction's id is its base's + 1; a fresh one
 * is above every commit. (env.info() is mdb_env_info, the newest meta page; getStats() would add
 * tree statistics, 100 us inside a write transaction.)
 */
function startedStale(root: RootDatabase): boolean {
  const env = (root as unknown as { env: { info(): { lastTxnId: number } } }).env;
  return root.getWriteTxnId() <= env.info().lastTxnId;
}

function staleUnavailable(): unknown {
  return unavailable("service_unavailable", "The store cannot write right now (another process opening its directory left it to be repaired); retry shortly");
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pauseSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Opens the environment, and opens it again while this opening left the base of the next write
 * transaction stale (see the header): nothing commits while it is stale (store transactions
 * wait), so the next opening reads the last commit and records that.
 */
function openEnv(options: Parameters<typeof open>[0] & object): RootDatabase {
  for (let attempt = 1; ; attempt++) {
    const root = open(options);
    let stale = false;
    root.transactionSync(() => {
      stale = startedStale(root);
      return ABORT;
    });
    if (!stale || attempt === 5) return root;
    void root.close(); // closes at once: nothing was written or read through it
  }
}

export class LmdbStore implements Store {
  readonly kind = "embedded";
  readonly root: RootDatabase;
  readonly meta: Database<unknown, string>;
  private readonly collections = new Map<string, LmdbCollection<Doc>>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Write transaction callbacks of this process running now (reads inside see uncommitted data). */
  writing = 0;

  constructor(readonly dir: string, options: Omit<LmdbStoreOptions, "dir"> = {}) {
    // noReadAhead: random reads bring in the page they need, not its neighbours (smaller RSS).
    // mapSize: address space only (the file grows as needed); reserving plenty up front avoids
    // remapping as the file grows, which would leave the pages of the old mappings resident.
    // (noReadAhead is a supported open option that lmdb's typings lack.)
    this.root = openEnv({
      path: join(dir, LMDB_FILE),
      maxDbs: 4096,
      noReadAhead: true,
      // Commits durable when acknowledged (see the header); overlapping sync lost the last one.
      overlappingSync: false,
      mapSize: options.mapSizeBytes ?? DEFAULT_MAP_SIZE,
    } as Parameters<typeof open>[0] & object);
    this.meta = this.openDb<Database<unknown, string>>("meta", {});
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), options.ttlSweepIntervalMs ?? 60_000);
    this.timer.unref();
  }

  collection<T extends Doc>(name: string): Collection<T> {
    if (!COLLECTION_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    this.assertOpen();
    return this.open(name) as unknown as Collection<T>;
  }

  open(name: string): LmdbCollection<Doc> {
    let collection = this.collections.get(name);
    if (!collection) {
      collection = new LmdbCollection<Doc>(this, name);
      this.collections.set(name, collection);
    }
    return collection;
  }

  assertOpen(): void {
    if (this.closed) throw new Error("store is closed");
  }

  /**
   * Runs fn in an asynchronous write transaction (lmdb puts those queued in one event turn in one
   * commit) and resolves once that committed. In a stale transaction (see the header) fn does not
   * run, and runs in a later one.
   */
  async transact<R>(fn: () => R): Promise<R> {
    const started = Date.now();
    for (;;) {
      const result = await this.root.transaction((): Result<R> | typeof STALE => {
        if (startedStale(this.root)) return STALE;
        this.writing++;
        try {
          return { ok: fn() };
        } catch (err) {
          return { err };
        } finally {
          this.writing--;
        }
      }).catch((err: unknown) => { throw storageFault(err); });
      if (result === STALE) {
        if (Date.now() - started > STALE_WAIT_MS) throw staleUnavailable();
        await pause(2);
        continue;
      }
      if ("err" in result) throw result.err;
      return result.ok;
    }
  }

  /**
   * lmdb's openDB inside a write transaction of ours: creating the database commits, and that
   * commit must not be on a stale base either (see the header).
   */
  openDb<D>(name: string, options: object): D {
    const started = Date.now();
    for (;;) {
      let db: D | undefined;
      this.root.transactionSync(() => {
        if (startedStale(this.root)) return ABORT;
        db = this.root.openDB(name, options as never) as D;
      });
      if (db) return db;
      if (Date.now() - started > STALE_SYNC_WAIT_MS) throw staleUnavailable();
      pauseSync(2);
    }
  }

  /**
   * The collections in this environment, sorted (read-only): each has a `d:<name>` database,
   * listed as a key of the root database. For tools that copy a whole store (`mailroom store copy`).
   */
  collectionNames(): string[] {
    this.assertOpen();
    const names: string[] = [];
    for (const key of this.root.getKeys({})) if (typeof key === "string" && key.startsWith("d:")) names.push(key.slice(2));
    return names.sort();
  }

  /** The id of the environment's last committed transaction (any process's). */
  lastTxnId(): number {
    return (this.root.getStats() as { lastTxnId: number }).lastTxnId;
  }

  async sweep(): Promise<void> {
    for (const collection of this.collections.values()) if (!this.closed) await collection.sweepExpired();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.root.committed;
    await this.root.close();
  }
}
