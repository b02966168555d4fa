import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CaptureStore } from "./capture.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("CaptureStore", () => {
  const fill = async (store: CaptureStore, n: number) => {
    const saved = [];
    for (let i = 0; i < n; i++) {
      saved.push(
        await store.save({
          deliveryId: `d${i}`, workspaceId: i % 2 ? "ws_b" : "ws_a", messageId: `m${i}@x.test`, from: "a@x.test",
          to: `r${i}@y.test`, subject: `S${i}`, raw: Buffer.from(`Subject: S${i}\r\n\r\nbody`), html: `<p>${i}</p>`, text: `${i}`,
        }),
      );
    }
    return saved;
  };
  const tempDir = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-capture-"));
    dirs.push(dir);
    return dir;
  };

  it("keeps raw messages and their parts, lists newest first per workspace", async () => {
    const store = new CaptureStore(await tempDir(), 100);
    const saved = await fill(store, 4);
    expect((await store.list(10)).entries.map((e) => e.subject)).toEqual(["S3", "S2", "S1", "S0"]);
    expect((await store.list(10, { workspaceId: "ws_a" })).entries.map((e) => e.deliveryId)).toEqual(["d2", "d0"]);
    const got = await store.get(saved[1].id);
    expect(got?.raw.toString()).toContain("Subject: S1");
    expect(got?.html).toBe("<p>1</p>");
    expect(await store.get(saved[1].id, "ws_a")).toBeUndefined();
    expect(await store.get("../../etc/passwd")).toBeUndefined();
  });

  it("keeps only the newest messages once past its limit", async () => {
    const dir = await tempDir();
    const store = new CaptureStore(dir, 2);
    const saved = await fill(store, 4);
    expect((await store.list(10)).entries.map((e) => e.subject)).toEqual(["S3", "S2"]);
    expect(await store.get(saved[0].id)).toBeUndefined();
    expect(existsSync(path.join(dir, `${saved[0].id}.eml`))).toBe(false);
    expect(existsSync(path.join(dir, `${saved[3].id}.eml`))).toBe(true);
  });

  it("pages by cursor, searches subject and recipient, and clears", async () => {
    const dir = await tempDir();
    const store = new CaptureStore(dir, 100);
    const saved = await fill(store, 12);
    const first = await store.list(5);
    expect(first.entries.map((e) => e.subject)).toEqual(["S11", "S10", "S9", "S8", "S7"]);
    expect(first.more).toBe(true);
    const second = await store.list(5, { before: first.entries[4].id });
    expect(second.entries.map((e) => e.subject)).toEqual(["S6", "S5", "S4", "S3", "S2"]);
    const last = await store.list(5, { before: second.entries[4].id });
    expect(last).toMatchObject({ more: false });
    expect(last.entries.map((e) => e.subject)).toEqual(["S1", "S0"]);
    // Subject or recipient, any case; the cursor pages within the search.
    expect((await store.list(10, { query: "s1" })).entries.map((e) => e.subject)).toEqual(["S11", "S10", "S1"]);
    expect((await store.list(10, { query: "R3@Y.TEST" })).entries.map((e) => e.subject)).toEqual(["S3"]);
    const searched = await store.list(2, { query: "s1" });
    expect(searched.more).toBe(true);
    expect((await store.list(2, { query: "s1", before: searched.entries[1].id })).entries.map((e) => e.subject)).toEqual(["S1"]);

    expect(await store.clear()).toBe(12);
    expect((await store.list(10)).entries).toEqual([]);
    expect(await store.get(saved[3].id)).toBeUndefined();
    expect(existsSync(path.join(dir, `${saved[3].id}.eml`))).toBe(false);
    // Capturing goes on after a clear.
    await fill(store, 1);
    expect((await store.list(10)).entries.map((e) => e.subject)).toEqual(["S0"]);
  });
});
