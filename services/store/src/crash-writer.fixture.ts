/**
 * Child process of the LMDB tests (lmdb.test.ts), two modes:
 *
 *  - `write <dir>`: writes documents to the store in <dir> as fast as it can, several in flight
 *    at once (so they share commits), and prints each id to stdout once its write is
 *    acknowledged. The crash test SIGKILLs it mid-stream.
 *  - `claim <dir> <name> <n>`: n compare-and-set increments (findOneAndUpdate on the value it
 *    read) on one counter, racing another process doing the same; prints "done <retries>".
 *  - `index <dir> <collection> <field>`: adds a unique index on the field, then exits.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { openLmdbStore } from "./lmdb.js";

const [mode, dir, name, count] = process.argv.slice(2);
const store = await openLmdbStore({ dir });

if (mode === "index") {
  await store.collection(name!).createIndex({ keys: { [count!]: 1 }, unique: true });
  await store.close();
} else if (mode === "claim") {
  const counters = store.collection<{ _id: string; n: number; by: string[] }>("counters");
  // Start together: the test creates <dir>/go once both processes said "ready".
  process.stdout.write("ready\n");
  while (!existsSync(join(dir, "go"))) await new Promise((resolve) => setTimeout(resolve, 5));
  let retries = 0;
  for (let done = 0; done < Number(count); ) {
    const current = await counters.findOne({ _id: "c" });
    const n = current?.n ?? 0;
    // Succeeds only if nobody (in any process) changed n since we read it.
    const won = await counters.findOneAndUpdate({ _id: "c", n }, { $set: { n: n + 1 }, $push: { by: name } });
    if (won) done++;
    else retries++;
  }
  await store.close();
  process.stdout.write(`done ${retries}\n`);
} else {
  const items = store.collection<{ _id: string; n: number; body: string }>("items");
  await items.createIndex({ keys: { n: 1 }, unique: true });
  let n = 0;
  const writer = async (lane: number) => {
    for (;;) {
      const id = `w${lane}_${n}`;
      const doc = { _id: id, n: n++, body: "x".repeat(200) };
      if (lane === 0) await items.updateOne({ _id: id }, { $set: { n: doc.n, body: doc.body } }, { upsert: true });
      else await items.insertOne(doc);
      process.stdout.write(`${id}\n`);
    }
  };
  process.stdout.write("ready\n");
  await Promise.all(Array.from({ length: 8 }, (_, lane) => writer(lane)));
}
