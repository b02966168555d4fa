/** Migration of the old nedb datafiles (<dir>/<collection>.db, JSON lines) into the LMDB store. */
import { rename } from "node:fs/promises";
import { createReadStream } from "node:fs";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import type { Doc } from "../port.js";
import { cloneValue } from "../query.js";
import { LmdbStore, type MigrationInfo } from "./environment.js";

// ---------------------------------------------------------------------------------------------
// Migration from the old nedb datafiles (<dir>/<collection>.db, JSON lines).

type NedbModel = { deserialize(raw: string): Record<string, unknown> };

export async function migrateNedbFile(store: LmdbStore, file: string, name: string): Promise<MigrationInfo> {
  const started = Date.now();
  const model = createRequire(import.meta.url)("@seald-io/nedb/lib/model.js") as NedbModel;
  const collection = store.open(name);
  await store.transact(() => collection.clearInTxn());
  const indexes = new Map<string, { fieldName: string | string[]; unique?: boolean; sparse?: boolean; expireAfterSeconds?: number }>();
  let batch: Record<string, unknown>[] = [];
  const flush = async () => {
    const lines = batch;
    batch = [];
    await store.transact(() => {
      for (const doc of lines) {
        if (doc.$$deleted === true) collection.removeRawInTxn(String(doc._id));
        else collection.putRawInTxn(cloneValue(doc) as Doc);
      }
    });
  };
  const reader = createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity });
  for await (const line of reader) {
    if (!line.trim()) continue;
    let doc: Record<string, unknown>;
    try {
      doc = model.deserialize(line);
    } catch {
      continue; // nedb also skips a torn last line
    }
    const created = doc.$$indexCreated as { fieldName?: string | string[] } | undefined;
    if (created && created.fieldName != null) {
      indexes.set(String(created.fieldName), created as { fieldName: string | string[] });
      continue;
    }
    if (typeof doc.$$indexRemoved === "string") {
      indexes.delete(doc.$$indexRemoved);
      continue;
    }
    if (doc._id === undefined) continue;
    batch.push(doc);
    if (batch.length >= 1000) await flush();
  }
  if (batch.length) await flush();
  for (const def of indexes.values()) {
    if (def.fieldName === "_id") continue;
    const fields = Array.isArray(def.fieldName) ? def.fieldName : String(def.fieldName).split(",");
    await store.transact(() => collection.addIndexInTxn(fields, def));
  }
  const movedTo = `${file}.migrated`;
  await store.root.flushed;
  await rename(file, movedTo);
  return { collection: name, documents: await collection.countDocuments(), indexes: indexes.size, from: file, movedTo, ms: Date.now() - started };
}
