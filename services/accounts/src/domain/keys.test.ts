import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openStore } from "@mailroom/store/open.js";
import { generateApiKey, hashApiKey } from "./keys.js";
import { mapResolver, memoryDirectory, snapshot, storeDirectory } from "../../../audience/src/testing.js";

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;

describe("API keys", () => {
  it("generates mr_live_ keys of 32 base62 characters, all different", () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const k of keys) expect(k).toMatch(/^mr_live_[0-9A-Za-z]{32}$/);
  });

  it("stores only the sha256 of a key: the plain key is in no document and no file", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-keys-"));
    try {
      const store = await openStore({ dataDir, service: "directory" });
      const dir = await storeDirectory(store, { resolver: mapResolver() });
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      const { plain, key } = await dir.keys.create("ws_a", { name: "ci", scopes: ["api_user"] });
      await dir.bootstrap.load({ workspaces: [{ id: "ws_a", name: "A", apiKeys: [{ key: "mr_test_fixed_secret_1", scopes: ["api_user"] }] }] });
      expect(plain).toMatch(/^mr_live_/);
      expect(key.hash).toBe(hashApiKey(plain));
      const docs = JSON.stringify(await snapshot(dir));
      expect(docs).not.toContain(plain);
      expect(docs).not.toContain("mr_test_fixed_secret_1");
      expect(docs).toContain(hashApiKey("mr_test_fixed_secret_1"));
      await store.close();
      // The scan below must be able to see a stored value: the hash is there in plain bytes.
      const stored = (await Promise.all((await readdir(path.join(dataDir, "directory"))).map((f) => readFile(path.join(dataDir, "directory", f), "latin1")))).join("");
      expect(stored).toContain(hashApiKey("mr_test_fixed_secret_1"));
      const files = await readdir(path.join(dataDir, "directory"));
      expect(files).toContain("store.mdb");
      for (const f of files) {
        // Binary store files: latin1 keeps every byte, so an ASCII secret would show.
        const text = await readFile(path.join(dataDir, "directory", f), "latin1");
        expect(text).not.toContain(plain);
        expect(text).not.toContain(plain.slice(8)); // not even the random part
        expect(text).not.toContain("mr_test_fixed_secret_1");
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("authenticates to workspace and scopes; unknown, malformed and revoked keys get 401", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const { plain, key } = await dir.keys.create("ws_a", { scopes: ["api_user", "admin"] });
    expect(await dir.keys.authenticate(plain)).toEqual({ workspaceId: "ws_a", keyId: key._id, scopes: ["api_user", "admin", "api_read"], role: "EDITOR", memberId: "" });
    for (const bad of ["", "short", "mr_live_" + "x".repeat(32), "has space in it", "x".repeat(300)]) {
      const err = await dir.keys.authenticate(bad).catch((e) => e);
      expect(errorInfoOf(err)).toMatchObject({ code: "unauthorized", httpStatus: 401 });
    }
    await dir.keys.revoke("ws_a", key._id);
    expect(await codeOf(dir.keys.authenticate(plain))).toBe("unauthorized");
    const listed = await dir.keys.list("ws_a");
    expect(listed[0].revokedAt).toBeInstanceOf(Date);
    expect(listed[0].prefix).toBe(plain.slice(0, 12));
  });

  it("records when a key was last used, at most one write a minute per key", async () => {
    let now = new Date("2026-03-01T10:00:00Z");
    const dir = await memoryDirectory({ now: () => now });
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const { plain, key } = await dir.keys.create("ws_a", { scopes: ["api_user"] });
    const { key: idle } = await dir.keys.create("ws_a", { scopes: ["api_user"] });
    const writes: string[] = [];
    const keys = dir.store.collection("api_keys");
    const updateOne = keys.updateOne.bind(keys);
    keys.updateOne = (async (...args: Parameters<typeof keys.updateOne>) => {
      if (JSON.stringify(args[1]).includes("lastUsedAt")) writes.push(String((args[0] as { _id: string })._id));
      return updateOne(...args);
    }) as typeof keys.updateOne;
    const lastUsed = async (id: string) => (await dir.keys.get("ws_a", id)).lastUsedAt?.toISOString();
    const settle = () => new Promise((r) => setTimeout(r, 20));

    expect(await lastUsed(key._id)).toBeUndefined();
    await dir.keys.authenticate(plain);
    await settle();
    expect(await lastUsed(key._id)).toBe("2026-03-01T10:00:00.000Z");
    // A hundred requests within the minute: no further write.
    for (let i = 0; i < 100; i++) {
      now = new Date(now.getTime() + 500);
      await dir.keys.authenticate(plain);
    }
    await settle();
    expect(writes).toEqual([key._id]);
    expect(await lastUsed(key._id)).toBe("2026-03-01T10:00:00.000Z");
    now = new Date("2026-03-01T10:01:05Z");
    await dir.keys.authenticate(plain);
    await settle();
    expect(writes).toEqual([key._id, key._id]);
    expect(await lastUsed(key._id)).toBe("2026-03-01T10:01:05.000Z");
    expect(await lastUsed(idle._id)).toBeUndefined();
    // An earlier use written late (another process) never moves it back.
    await keys.updateOne({ _id: key._id }, { $set: {} });
    const repo = (await import("../adapters/api-key-store.js")).ApiKeyStore;
    await (await repo.open(dir.store)).touchLastUsed(key._id, new Date("2026-03-01T09:00:00Z"));
    expect(await lastUsed(key._id)).toBe("2026-03-01T10:01:05.000Z");
  });

  it("checks required scopes and refuses unknown scopes", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const { plain } = await dir.keys.create("ws_a", { scopes: ["admin"] });
    expect(await codeOf(dir.keys.authenticate(plain, ["api_user"]))).toBe("insufficient_scope");
    expect((await dir.keys.authenticate(plain, ["admin"])).scopes).toEqual(["admin"]);
    expect(await codeOf(dir.keys.create("ws_a", { scopes: ["root"] }))).toBe("invalid_scope");
    // An empty scope list means no scope: such a key authenticates nothing that needs one.
    const scopeless = await dir.keys.create("ws_a", {});
    expect(scopeless.key.scopes).toEqual([]);
    expect(await codeOf(dir.keys.authenticate(scopeless.plain, ["api_user"]))).toBe("insufficient_scope");
    expect(await codeOf(dir.keys.authenticate(scopeless.plain, ["api_read"]))).toBe("insufficient_scope");
  });

  it("revoking another workspace's key is a 404 and changes nothing", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    const { plain, key } = await dir.keys.create("ws_a", {});
    expect(await codeOf(dir.keys.revoke("ws_b", key._id))).toBe("api_key_not_found");
    expect((await dir.keys.authenticate(plain)).workspaceId).toBe("ws_a");
    expect(await dir.keys.list("ws_b")).toEqual([]);
  });
});
