import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { createEmbeddedStore } from "./embedded.js";
import type { Store } from "./port.js";

export interface OpenStoreOptions {
  /** Root data directory; the embedded store keeps its files in <dataDir>/<service>/. */
  dataDir: string;
  /** When set, MongoDB is used (database `mailroom_<service>`) and dataDir is ignored. */
  mongodbUrl?: string;
  /** Service name, e.g. "email". */
  service: string;
  /** Embedded store only: datafile compaction interval. */
  compactionIntervalMs?: number;
}

const SERVICE_NAME = /^[a-z0-9][a-z0-9_-]{0,40}$/;

/** The store a service uses: MongoDB when a URL is configured, else the embedded file store. */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (!SERVICE_NAME.test(options.service)) throw new Error(`invalid service name "${options.service}"`);
  if (options.mongodbUrl) {
    // Loaded lazily: services on the embedded store never pay for the driver.
    const { openMongoStore } = await import("./mongo.js");
    return openMongoStore({ url: options.mongodbUrl, service: options.service });
  }
  const dir = join(options.dataDir, options.service);
  await mkdir(dir, { recursive: true });
  return createEmbeddedStore({ dir, compactionIntervalMs: options.compactionIntervalMs });
}

/** A fresh in-memory store (embedded semantics, nothing on disk) for unit tests. */
export function openMemoryStore(): Store {
  return createEmbeddedStore();
}
