import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { LMDB_FILE, openLmdbStore, type MigrationInfo, type StoreLogger } from "./lmdb.js";
import { createEmbeddedStore } from "./nedb-legacy.js";
import type { Store } from "./port.js";
import { instrumentStore } from "./instrumented.js";

export type { MigrationInfo, StoreLogger } from "./lmdb.js";

export interface OpenStoreOptions {
  /** Root data directory; the embedded store keeps its files in <dataDir>/<service>/. */
  dataDir: string;
  /** When set, MongoDB is used (database `mailroom_<service>`) and dataDir is ignored. */
  mongodbUrl?: string;
  /** When set, PostgreSQL is used (schema `mailroom_<service>`) and dataDir is ignored. Not with mongodbUrl. */
  postgresUrl?: string;
  /** PostgreSQL: connections in this process's pool (MAILROOM_POSTGRES_POOL). Default 10. */
  postgresPool?: number;
  /** Service name, e.g. "email". */
  service: string;
  /** Unused since the embedded store moved to LMDB (was: nedb datafile compaction interval). */
  compactionIntervalMs?: number;
  /** Embedded store: where the one-line notice of a migration from the old nedb files goes (default console). */
  logger?: StoreLogger;
  /** Embedded store: called once per collection migrated from the old nedb files. */
  onMigrate?: (info: MigrationInfo) => void;
}

const SERVICE_NAME = /^[a-z0-9][a-z0-9_-]{0,40}$/;

/**
 * The store a service uses: PostgreSQL or MongoDB when a URL is configured (never both), else
 * the embedded LMDB store in <dataDir>/<service>/store.mdb (old nedb datafiles there are
 * migrated on first open).
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (!SERVICE_NAME.test(options.service)) throw new Error(`invalid service name "${options.service}"`);
  if (options.postgresUrl && options.mongodbUrl) throw new Error("both a PostgreSQL and a MongoDB URL are given: choose one store");
  if (options.postgresUrl) {
    // Loaded lazily, as the MongoDB driver is.
    const { openPostgresStore } = await import("./postgres.js");
    const store = await openPostgresStore({ url: options.postgresUrl, service: options.service, poolSize: options.postgresPool });
    return instrumentStore(store, options.service, "postgresql");
  }
  if (options.mongodbUrl) {
    // Loaded lazily: services on the embedded store never pay for the driver.
    const { openMongoStore } = await import("./mongo.js");
    return instrumentStore(await openMongoStore({ url: options.mongodbUrl, service: options.service }), options.service);
  }
  const dir = join(options.dataDir, options.service);
  await mkdir(dir, { recursive: true });
  return instrumentStore(await openLmdbStore({ dir, logger: options.logger, onMigrate: options.onMigrate }), options.service, "lmdb");
}

/** A fresh in-memory store (nedb in memory, same port semantics, nothing on disk) for unit tests. */
export function openMemoryStore(): Store {
  return createEmbeddedStore();
}

/**
 * A unit's store when it exists already, else null (nothing is created): the embedded store's
 * file in <dataDir>/<service>/, PostgreSQL's schema `mailroom_<service>`, MongoDB's database
 * `mailroom_<service>` with a collection. For reading another unit's data, such as the store
 * the accounts and audience units adopt on first start (the directory's, before the split).
 * The embedded store is opened without TTL sweeps: reading it deletes nothing.
 */
export async function openStoreIfPresent(options: OpenStoreOptions): Promise<Store | null> {
  if (!SERVICE_NAME.test(options.service)) throw new Error(`invalid service name "${options.service}"`);
  if (options.postgresUrl) {
    const { openPostgresStore, postgresSchemaExists } = await import("./postgres.js");
    if (!(await postgresSchemaExists(options.postgresUrl, `mailroom_${options.service}`))) return null;
    return openPostgresStore({ url: options.postgresUrl, service: options.service, poolSize: 2 });
  }
  if (options.mongodbUrl) {
    const { openMongoStore, mongoDatabaseExists } = await import("./mongo.js");
    if (!(await mongoDatabaseExists(options.mongodbUrl, `mailroom_${options.service}`))) return null;
    return openMongoStore({ url: options.mongodbUrl, service: options.service });
  }
  const dir = join(options.dataDir, options.service);
  if (!existsSync(join(dir, LMDB_FILE))) return null;
  return openLmdbStore({ dir, ttlSweepIntervalMs: 2 ** 31 - 1, logger: options.logger });
}
