import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { reserveSendable } from "./sendable.js";
import { memoryDirectory } from "../testing.js";

describe("reserving the sendable recipients of a send", () => {
  it("leaves suppressed recipients out of the count and reports them once", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 10 });
    await dir.suppressions.add("ws_a", "Gone@Example.test", "unsubscribed");
    await dir.suppressions.add("ws_b", "other@example.test", "manual"); // another tenant's list
    const r = await reserveSendable(dir, "ws_a", ["a@example.test", "gone@example.test", "GONE@example.test", "other@example.test", "a@example.test"]);
    expect(r.suppressed.map((s) => [s.emailLower, s.reason])).toEqual([["gone@example.test", "unsubscribed"]]);
    expect(r).toMatchObject({ granted: true, reserved: 3, used: 3, limit: 10 });
    expect(r.period).toMatch(/^\d{4}-\d{2}$/);
    expect((await dir.usage.get("ws_a")).used).toBe(3);
  });

  it("reserves nothing (and needs no usage) when every recipient is suppressed", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 0 });
    await dir.suppressions.add("ws_a", "gone@example.test", "hard_bounce");
    const r = await reserveSendable(dir, "ws_a", ["gone@example.test"]);
    expect(r).toMatchObject({ granted: true, reserved: 0, period: "" });
    expect(r.suppressed).toHaveLength(1);
    expect((await dir.usage.get("ws_a")).used).toBe(0);
  });

  it("refuses all or nothing when the sendable count would cross the limit", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 3 });
    await dir.suppressions.add("ws_a", "gone@example.test", "complaint");
    await dir.usage.reserve("ws_a", 1);
    const refused = await reserveSendable(dir, "ws_a", ["a@x.test", "b@x.test", "c@x.test"]);
    expect(refused).toMatchObject({ granted: false, reserved: 0, used: 1, limit: 3 });
    expect((await dir.usage.get("ws_a")).used).toBe(1);
    // The suppressed one does not count, so these fit exactly.
    const granted = await reserveSendable(dir, "ws_a", ["a@x.test", "gone@example.test", "b@x.test"]);
    expect(granted).toMatchObject({ granted: true, reserved: 2, used: 3 });
  });

  it("never overshoots the monthly limit under parallel reservations, suppressed recipients not counted", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A", monthlyLimit: 50 });
    await dir.suppressions.add("ws_a", "gone@example.test", "unsubscribed");
    // 120 requests of 1–3 emails, each with a suppressed recipient besides.
    const batches = Array.from({ length: 120 }, (_, i) => [
      "gone@example.test",
      ...Array.from({ length: (i % 3) + 1 }, (_, j) => `u${i}.${j}@example.test`),
    ]);
    const results = await Promise.all(batches.map((b) => reserveSendable(dir, "ws_a", b)));
    const reserved = results.reduce((sum, r) => sum + r.reserved, 0);
    const { used } = await dir.usage.get("ws_a");
    expect(used).toBe(reserved);
    expect(used).toBeLessThanOrEqual(50);
    expect(used).toBeGreaterThanOrEqual(48); // refused only once the remainder was too small
    results.forEach((r, i) => {
      expect(r.suppressed.map((s) => s.emailLower)).toEqual(["gone@example.test"]);
      expect(r.reserved).toBe(r.granted ? batches[i].length - 1 : 0);
    });
  });

  it("rejects unknown workspaces and oversized lists with clear 4xx errors", async () => {
    const dir = await memoryDirectory();
    expect(errorInfoOf(await reserveSendable(dir, "ws_zzz", ["a@x.test"]).catch((e) => e))?.code).toBe("workspace_not_found");
    const tooMany = Array.from({ length: 10_001 }, (_, i) => `u${i}@x.test`);
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    expect(errorInfoOf(await reserveSendable(dir, "ws_a", tooMany).catch((e) => e))?.httpStatus).toBe(400);
  });
});
