import { describe, expect, it } from "vitest";
import { memoryDirectory } from "../../../audience/src/testing.js";
import { UsageStore } from "../adapters/usage-store.js";
import type { UsageRepository } from "@mailroom/records/ports.js";
import { Usage } from "./usage.js";
import { IDLE_MS, MAX_AHEAD } from "./usage-lease.js";

/** A Usage over the in-memory store whose counter writes are counted, on a clock the test moves. */
async function leasedUsage(monthlyLimit: number) {
  const dir = await memoryDirectory();
  await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit });
  const store = await UsageStore.open(dir.store);
  const writes = { reserve: 0, release: 0 };
  const repo: UsageRepository = {
    ensure: (c) => store.ensure(c),
    find: (id) => store.find(id),
    reserve: (id, count, limit) => (writes.reserve++, store.reserve(id, count, limit)),
    release: (id, count) => (writes.release++, store.release(id, count)),
  };
  const clock = { at: new Date("2026-03-10T12:00:00Z") };
  const usage = new Usage(repo, dir.workspaces, () => clock.at);
  const counter = async (period = "2026-03") => (await store.find(`ws_a:${period}`))?.used ?? 0;
  const tick = (ms: number) => (clock.at = new Date(clock.at.getTime() + ms));
  /** A busy workspace: `times` reservations of 10, 5 ms apart. */
  const busy = async (times: number) => {
    for (let i = 0; i < times; i++) {
      await usage.reserve("ws_a", 10);
      tick(5);
    }
  };
  return { dir, usage, writes, counter, tick, clock, busy };
}

describe("usage lease", () => {
  it("serves a busy workspace far from its limit mostly from memory, and reports only what was granted", async () => {
    const { usage, writes, counter, tick } = await leasedUsage(1_000_000);
    let granted = 0;
    for (let i = 0; i < 200; i++) {
      const r = await usage.reserve("ws_a", 20);
      expect(r.granted).toBe(true);
      granted += 20;
      expect(r.used).toBe(granted);
      tick(5);
    }
    expect(writes.reserve).toBeLessThan(40);
    // The counter holds the lease too, never more than the lease's cap beyond what was granted.
    expect(await counter()).toBeGreaterThan(granted);
    expect(await counter()).toBeLessThanOrEqual(granted + MAX_AHEAD);
    expect((await usage.get("ws_a")).used).toBe(granted);
    await usage.close();
    expect(await counter()).toBe(granted);
  });

  it("gives unspent units back once the workspace goes quiet", async () => {
    const { usage, counter, tick, busy } = await leasedUsage(1_000_000);
    await busy(50);
    expect(await counter()).toBeGreaterThan(500);
    tick(IDLE_MS + 1);
    await expect.poll(counter, { timeout: 3_000, interval: 50 }).toBe(500);
    await usage.close();
  });

  it("stays exact at the limit: every unit is granted once and none beyond it", async () => {
    const { usage, counter, tick } = await leasedUsage(1_000);
    let granted = 0;
    // 1,500 units asked in all.
    for (let i = 0; i < 300; i++) {
      const size = (i % 5) + 3;
      const r = await usage.reserve("ws_a", size);
      if (r.granted) granted += size;
      tick(3);
    }
    // Sizes 3..7: whatever is left at the end is smaller than the next request.
    expect(granted).toBeGreaterThan(1_000 - 7);
    expect(granted).toBeLessThanOrEqual(1_000);
    expect(await counter()).toBeLessThanOrEqual(1_000);
    expect((await usage.get("ws_a")).used).toBe(granted);
    await usage.close();
    expect(await counter()).toBe(granted);
  });

  it("respects a limit lowered while units are leased", async () => {
    const { dir, usage, busy } = await leasedUsage(100_000);
    await busy(40);
    const used = (await usage.get("ws_a")).used;
    await dir.workspaces.update("ws_a", { monthlyLimit: used + 5 });
    expect((await usage.reserve("ws_a", 5)).granted).toBe(true);
    expect((await usage.reserve("ws_a", 1)).granted).toBe(false);
    expect((await usage.get("ws_a")).used).toBe(used + 5);
    await usage.close();
  });

  it("counts each month on its own: a lease taken in one month goes back to that month", async () => {
    const { usage, counter, clock, busy } = await leasedUsage(1_000_000);
    clock.at = new Date("2026-03-31T23:59:58Z");
    await busy(40);
    clock.at = new Date("2026-04-01T00:00:00Z");
    const april = await usage.reserve("ws_a", 10);
    expect(april).toMatchObject({ granted: true, used: 10, period: "2026-04" });
    await expect.poll(() => counter("2026-03"), { timeout: 3_000, interval: 50 }).toBe(400);
    await usage.close();
    expect(await counter("2026-04")).toBe(10);
  });
});
