import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { openLmdbStore } from "@mailroom/store/lmdb.js";
import type { Store } from "@mailroom/store/port.js";
import type { EngagementCondition, EngagementEvent } from "@mailroom/filter/filter.js";
import { ENGAGEMENT_TOTALS_COLLECTION, EngagementStore, engagementTotalId, type NewEngagement } from "./engagement-store.js";

const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const STORES: [string, () => Promise<Store>][] = [
  ["memory", async () => openMemoryStore()],
  ["lmdb", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mailroom-engagement-"));
    tempDirs.push(dir);
    return openLmdbStore({ dir });
  }],
];

/** Four instants only: many events share a time, so paging by time must step over ties. */
const TIMES = ["2026-03-01", "2026-03-10", "2026-03-20", "2026-03-30"].map((d) => new Date(`${d}T12:00:00Z`));
const MESSAGES = [{ messageId: "cmp_0", broadcastId: "cmp_0" }, { messageId: "cmp_1", broadcastId: "cmp_1" }, { messageId: "cmp_2", broadcastId: "cmp_2" }, { messageId: "trs_0" }, { messageId: "trs_1" }];
const KINDS: EngagementEvent[] = ["opened", "clicked"];

/** A fixed pseudo-random set of events (with repeats of the same (contact, kind, message)). */
function events(workspaceId: string, contacts: number): NewEngagement[] {
  let seed = 7;
  const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor(seed / 65_536) % n);
  return Array.from({ length: contacts * 10 }, () => {
    const m = MESSAGES[next(MESSAGES.length)];
    return { workspaceId, contactId: `ctc_${String(next(contacts)).padStart(3, "0")}`, kind: KINDS[next(2)], ...m, at: TIMES[next(TIMES.length)] };
  });
}

/** The expected contacts, by brute force over the distinct (contact, kind, message) events (the first time recorded wins). */
function expected(all: NewEngagement[], workspaceId: string, c: EngagementCondition): string[] {
  const distinct = new Map<string, NewEngagement>();
  for (const e of all) {
    const key = `${e.workspaceId}|${e.contactId}|${e.kind}|${e.messageId}`;
    if (!distinct.has(key)) distinct.set(key, e);
  }
  const counts = new Map<string, number>();
  const lasts = new Map<string, Date>();
  for (const e of distinct.values()) {
    if (e.workspaceId !== workspaceId || e.kind !== c.event) continue;
    if (c.broadcastId !== undefined && e.broadcastId !== c.broadcastId) continue;
    const at = e.at.getTime();
    if (c.broadcastId !== undefined || c.min > 1 || !c.since) {
      if (c.since && at < c.since.getTime()) continue;
      counts.set(e.contactId, (counts.get(e.contactId) ?? 0) + 1);
    } else {
      counts.set(e.contactId, 1);
      if (!lasts.has(e.contactId) || lasts.get(e.contactId)! < e.at) lasts.set(e.contactId, e.at);
    }
  }
  return [...counts].filter(([id, n]) => n >= c.min && (!lasts.size || !c.since || lasts.get(id)! >= c.since)).map(([id]) => id).sort();
}

for (const [name, open] of STORES) {
  describe(`engagement records on the ${name} store`, () => {
    it("resolves every kind of condition exactly, across pages and time ties, per workspace", async () => {
      const store = await open();
      const engagement = await EngagementStore.open(store, { pageSize: 2 });
      const a = events("ws_a", 12);
      const b = events("ws_b", 5); // same contact ids and broadcasts in another workspace
      let recorded = 0;
      for (const e of [...a, ...b]) if (await engagement.record(e)) recorded++;
      const distinct = new Set([...a, ...b].map((e) => `${e.workspaceId}|${e.contactId}|${e.kind}|${e.messageId}`));
      expect(recorded).toBe(distinct.size);

      let checked = 0;
      for (const event of KINDS) {
        for (const broadcastId of [undefined, "cmp_0", "cmp_2"]) {
          for (const since of [undefined, TIMES[1], TIMES[3]]) {
            for (const min of [1, 2, 3]) {
              const c: EngagementCondition = { event, min, ...(broadcastId ? { broadcastId } : {}), ...(since ? { since } : {}) };
              for (const ws of ["ws_a", "ws_b"]) {
                const got = [...(await engagement.contactsWith(ws, c))].sort();
                expect(got, `${ws} ${JSON.stringify(c)}`).toEqual(expected([...a, ...b], ws, c));
                if (got.length) checked++;
              }
            }
          }
        }
      }
      expect(checked).toBeGreaterThan(20); // the cases select contacts, not only nothing
      await engagement.deleteForContact("ws_a", "ctc_001");
      expect([...(await engagement.contactsWith("ws_a", { event: "opened", min: 1 }))]).not.toContain("ctc_001");
      expect(await engagement.contactsWith("ws_b", { event: "opened", min: 1 })).toEqual([...new Set(expected(b, "ws_b", { event: "opened", min: 1 }))].sort());
      await store.close();
    });

    it("records in batches (repeats inside and across them) exactly what one at a time records", async () => {
      const [oneStore, batchStore] = [await open(), await open()];
      const one = await EngagementStore.open(oneStore, { pageSize: 3 });
      const batched = await EngagementStore.open(batchStore, { pageSize: 3 });
      const all = [...events("ws_a", 12), ...events("ws_b", 5)];
      const singly: boolean[] = [];
      for (const e of all) singly.push(await one.record(e));
      const together: boolean[] = [];
      for (let i = 0; i < all.length; i += 7) together.push(...(await batched.recordMany(all.slice(i, i + 7))));
      expect(together).toEqual(singly);
      for (const event of KINDS) {
        for (const since of [undefined, TIMES[2]]) {
          for (const min of [1, 2, 4]) {
            const c: EngagementCondition = { event, min, ...(since ? { since } : {}) };
            expect([...(await batched.contactsWith("ws_a", c))], JSON.stringify(c)).toEqual([...(await one.contactsWith("ws_a", c))]);
          }
        }
      }
      const times = async (s: EngagementStore) => {
        const out: string[] = [];
        await s.engagedTimes("ws_a", Array.from({ length: 12 }, (_, i) => `ctc_${String(i).padStart(3, "0")}`), TIMES[0], (c, at) => out.push(`${c}@${at}`));
        return out.sort();
      };
      expect(await times(batched)).toEqual(await times(one));
      expect((await times(one)).length).toBeGreaterThan(10);
      await Promise.all([oneStore.close(), batchStore.close()]);
    });

    it("keeps a contact's first and last time of a kind whatever order its events come in", async () => {
      const store = await open();
      const engagement = await EngagementStore.open(store);
      const e = (messageId: string, at: Date): NewEngagement => ({ workspaceId: "ws_a", contactId: "ctc_001", kind: "opened", messageId, at });
      await engagement.recordMany([e("m2", TIMES[2])]);
      await engagement.recordMany([e("m1", TIMES[0]), e("m3", TIMES[1])]); // both earlier than the one recorded
      await engagement.recordMany([e("m4", TIMES[3]), e("m1", TIMES[3])]); // a later one, and a repeat
      const total = await store.collection(ENGAGEMENT_TOTALS_COLLECTION).findOne({ _id: engagementTotalId("ws_a", "opened", "ctc_001") });
      expect(total).toMatchObject({ count: 4, first: TIMES[0], last: TIMES[3] });
      expect([...(await engagement.contactsWith("ws_a", { event: "opened", min: 1, since: TIMES[3] }))]).toEqual(["ctc_001"]);
      await store.close();
    });
  });
}
