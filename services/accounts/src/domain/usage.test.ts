import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../../../audience/src/testing.js";

describe("monthly usage", () => {
  it("grants exactly the limit to 200 concurrent reservations against a limit of 50", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 50 });
    const results = await Promise.all(Array.from({ length: 200 }, () => dir.usage.reserve("ws_a", 1)));
    expect(results.filter((r) => r.granted)).toHaveLength(50);
    expect((await dir.usage.get("ws_a")).used).toBe(50);
    expect(results.every((r) => r.used <= 50 && r.limit === 50)).toBe(true);
  });

  it("never overshoots with mixed reservation sizes and refuses a batch that would cross the limit", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 100 });
    const sizes = Array.from({ length: 120 }, (_, i) => (i % 7) + 1);
    const results = await Promise.all(sizes.map((n) => dir.usage.reserve("ws_a", n)));
    const granted = results.reduce((sum, r, i) => sum + (r.granted ? sizes[i] : 0), 0);
    const { used } = await dir.usage.get("ws_a");
    expect(used).toBe(granted);
    expect(used).toBeLessThanOrEqual(100);
    const big = await dir.usage.reserve("ws_a", 101);
    expect(big.granted).toBe(false);
    expect((await dir.usage.get("ws_a")).used).toBe(used);
  });

  it("releases reservations (never below zero) and counts per UTC calendar month", async () => {
    let now = new Date("2026-01-31T23:59:59Z");
    const dir = await memoryDirectory({ now: () => now });
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 3 });
    const r = await dir.usage.reserve("ws_a", 3);
    expect(r).toMatchObject({ granted: true, used: 3, period: "2026-01" });
    expect((await dir.usage.reserve("ws_a", 1)).granted).toBe(false);
    await dir.usage.release("ws_a", 2, r.period);
    expect((await dir.usage.get("ws_a")).used).toBe(1);
    await dir.usage.release("ws_a", 5, r.period);
    expect((await dir.usage.get("ws_a")).used).toBe(0);
    now = new Date("2026-02-01T00:00:00Z");
    await dir.usage.reserve("ws_a", 2);
    expect(await dir.usage.get("ws_a")).toMatchObject({ used: 2, period: "2026-02" });
  });

  it("rejects bad counts and unknown workspaces with clear errors", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    for (const n of [0, -1, 1.5]) {
      expect(errorInfoOf(await dir.usage.reserve("ws_a", n).catch((e) => e))?.httpStatus).toBe(400);
    }
    expect(errorInfoOf(await dir.usage.reserve("ws_zzz", 1).catch((e) => e))?.code).toBe("workspace_not_found");
    expect((await dir.usage.get("ws_a")).used).toBe(0);
  });
});
