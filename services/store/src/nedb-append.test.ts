import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEmbeddedStore } from "./nedb-legacy.js";

type Item = { _id: string; n: number };

const openFds = async () => (await readdir("/proc/self/fd")).length;

describe("embedded store appends through a kept-open handle", () => {
  it("keeps every write across compactions and reopen, and releases its handles on close", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mr-append-"));
    const fdsBefore = await openFds();
    const store = createEmbeddedStore({ dir });
    const items = store.collection<Item>("items");
    await items.insertOne({ _id: "a", n: 1 });
    await items.insertOne({ _id: "b", n: 1 });
    // Compaction rewrites the file by rename: later appends must land in the new file.
    await (items as unknown as { compact(): Promise<void> }).compact();
    await items.updateOne({ _id: "a" }, { $inc: { n: 41 } });
    await items.insertOne({ _id: "c", n: 3 });
    await items.deleteOne({ _id: "b" });
    const onDisk = await readFile(join(dir, "items.db"), "utf8");
    expect(onDisk).toContain('"_id":"c"');
    await store.close();
    expect(await openFds()).toBeLessThanOrEqual(fdsBefore);

    const reopened = createEmbeddedStore({ dir });
    const again = reopened.collection<Item>("items");
    expect(await again.find({}, { sort: { _id: 1 } })).toEqual([{ _id: "a", n: 42 }, { _id: "c", n: 3 }]);
    await reopened.close();
  });
});
