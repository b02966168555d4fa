/**
 * What `store copy` reads in a data dir: the units' embedded stores (<dataDir>/<unit>/store.mdb),
 * and whether units still run on them.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { LMDB_FILE, openLmdbStore, type LmdbStore } from "@mailroom/store/lmdb.js";

/** As openStore accepts it (services/store/src/open.ts): the unit's name is its directory's. */
const UNIT_NAME = /^[a-z0-9][a-z0-9_-]{0,40}$/;

/** The data dir the units use: MAILROOM_DATA_DIR, else ./.mailroom (kit's config.ts default). */
export function defaultDataDir(env: NodeJS.ProcessEnv): string {
  return path.resolve(env.MAILROOM_DATA_DIR || ".mailroom");
}

/** The units that keep an embedded store in the data dir, sorted. */
export function unitsWithStores(dataDir: string): string[] {
  return readdirSync(dataDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && UNIT_NAME.test(e.name) && existsSync(path.join(dataDir, e.name, LMDB_FILE)))
    .map((e) => e.name)
    .sort();
}

/** Opens a unit's store for reading: no TTL sweeps (they would delete in the source while it is copied). */
export function openSource(dataDir: string, unit: string, log: (line: string) => void): Promise<LmdbStore> {
  return openLmdbStore({ dir: path.join(dataDir, unit), ttlSweepIntervalMs: 2 ** 31 - 1, logger: { info: log } });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Units `npm start` runs on this data dir now: its <dataDir>/run/<unit>.pid files whose process lives. */
export function launcherPids(dataDir: string): string[] {
  const runDir = path.join(dataDir, "run");
  if (!existsSync(runDir) || !statSync(runDir).isDirectory()) return [];
  const found: string[] = [];
  for (const file of readdirSync(runDir).filter((f) => f.endsWith(".pid")).sort()) {
    const pid = Number(readFileSync(path.join(runDir, file), "utf8").trim());
    if (Number.isInteger(pid) && pid > 1 && pid !== process.pid && alive(pid)) found.push(`${file.slice(0, -4)} (pid ${pid})`);
  }
  return found;
}

/**
 * Other live processes that have the store open: LMDB lets a reader open it beside a writer, but
 * records every process that reads in its lock file's reader table (a unit reads as it starts).
 * Slots of dead processes are cleared first, so a unit that was killed does not count.
 */
export function otherReaders(store: LmdbStore): number[] {
  store.root.readerCheck();
  const pids = new Set<number>();
  for (const line of store.root.readerList().split("\n")) {
    const pid = Number(/^\s*(\d+)\s/.exec(line)?.[1]);
    if (pid && pid !== process.pid) pids.add(pid);
  }
  return [...pids];
}
