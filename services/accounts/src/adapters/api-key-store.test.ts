import { afterAll, describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { openPostgresStore } from "@mailroom/store/postgres.js";
import { createTestDatabase } from "@mailroom/store/postgres.fixture.js";
import type { Store } from "@mailroom/store/port.js";
import { ApiKeyStore } from "./api-key-store.js";

/** A key's last use on each store: set when absent, moved forward, never back (another process wrote a later one). */
const postgres = await createTestDatabase();
if ("skipReason" in postgres) console.log(`api-key-store: PostgreSQL skipped (${postgres.skipReason})`);
afterAll(async () => {
  if ("drop" in postgres) await postgres.drop();
});

const stores: Array<[string, () => Promise<Store>, boolean]> = [
  ["memory", async () => openMemoryStore(), false],
  ["postgres", () => openPostgresStore({ url: "url" in postgres ? postgres.url : "", service: "directory", poolSize: 2 }), "skipReason" in postgres],
];

describe.each(stores)("ApiKeyStore.touchLastUsed on %s", (_name, open, skip) => {
  it.skipIf(skip)("sets the last use when there is none, moves it forward and never back", async () => {
    const store = await open();
    try {
      const keys = await ApiKeyStore.open(store);
      await keys.insert({ _id: "key_a", workspaceId: "ws_a", name: "a", prefix: "mr_live_aaaa", hash: "h".repeat(64), scopes: ["api_user"], createdAt: new Date(0), revokedAt: null });
      const lastUsed = async () => (await keys.find("ws_a", "key_a"))?.lastUsedAt?.toISOString();
      expect(await lastUsed()).toBeUndefined();
      await keys.touchLastUsed("key_a", new Date("2030-01-01T10:00:00Z"));
      expect(await lastUsed()).toBe("2030-01-01T10:00:00.000Z");
      await keys.touchLastUsed("key_a", new Date("2030-01-01T10:05:00Z"));
      expect(await lastUsed()).toBe("2030-01-01T10:05:00.000Z");
      await keys.touchLastUsed("key_a", new Date("2030-01-01T09:00:00Z"));
      expect(await lastUsed()).toBe("2030-01-01T10:05:00.000Z");
    } finally {
      await store.close();
    }
  });
});
