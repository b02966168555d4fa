import { openMemoryStore } from "../../kit/src/store/open.js";
import type { Store } from "../../kit/src/store/port.js";
import { createDirectory, type Directory, type DirectoryOptions } from "./directory.js";
import { generateDkimKeyPair, type DkimKeyPair, type TxtResolver } from "./dns.js";

/** A resolver answering from a map (name → TXT records as chunk lists). */
export function mapResolver(records: Record<string, string[][]> = {}): TxtResolver & { records: Record<string, string[][]> } {
  return {
    records,
    async resolveTxt(name: string) {
      const found = records[name.toLowerCase()];
      if (!found) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: "ENOTFOUND" });
      return found;
    },
  };
}

let sharedKey: Promise<DkimKeyPair> | undefined;
/**
 * One real RSA 2048 pair per test process, handed to every domain (generation takes about
 * a second); tests that need distinct keys pass generateDkimKeyPair themselves.
 */
export function pooledDkimKey(): Promise<DkimKeyPair> {
  sharedKey ??= generateDkimKeyPair();
  return sharedKey;
}

/** A directory over a fresh in-memory store, for unit tests. */
export async function memoryDirectory(opts: DirectoryOptions = {}): Promise<Directory & { store: Store }> {
  const store = openMemoryStore();
  const dir = await createDirectory(store, { resolver: mapResolver(), generateDkimKey: pooledDkimKey, ...opts });
  return { ...dir, store };
}

/** Every document of every directory collection, for "nothing changed" assertions. */
export async function snapshot(dir: Directory): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [name, coll] of Object.entries(dir.repos)) {
    out[name] = await coll.find({}, { sort: { _id: 1 } });
  }
  return out;
}
