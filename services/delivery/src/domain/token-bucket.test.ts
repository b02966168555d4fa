import { describe, expect, it } from "vitest";
import { takeFromBucket } from "@mailroom/kit/token-bucket.js";
import { classifySmtpError, outcomeEventId, retryDelayMs } from "./outcome.js";
import { SmtpFailure } from "./ports.js";
import { Pacer, leaseSize } from "./pacer.js";
import { MemoryPacing } from "../testing.js";

describe("token bucket", () => {
  it("starts full, refills at the rate, never above the burst, and says how long to wait", () => {
    let t = takeFromBucket(undefined, 10, 10, 8, 0);
    expect(t.granted).toBe(8);
    t = takeFromBucket(t.state, 10, 10, 8, 0);
    expect(t.granted).toBe(2);
    t = takeFromBucket(t.state, 10, 10, 1, 0);
    expect(t).toMatchObject({ granted: 0, waitMs: 100 });
    t = takeFromBucket(t.state, 10, 10, 100, 10_000);
    expect(t.granted).toBe(10);
  });

  it("does not mint tokens when another process's clock is behind", () => {
    const t = takeFromBucket({ tokens: 0, at: 5_000 }, 10, 10, 1, 4_000);
    expect(t.granted).toBe(0);
    expect(t.state.at).toBe(5_000);
  });
});

describe("Pacer", () => {
  it("leases a batch from the shared bucket and never exceeds the rate", async () => {
    let now = 0;
    const repo = new MemoryPacing(() => now);
    await repo.setWorkspaceRate("ws_a", 50);
    const pacer = new Pacer(repo, { key: "r", rate: 0 }, () => now);
    let sent = 0;
    for (let step = 0; step < 100; step++) {
      while ((await pacer.acquire("ws_a")) === 0) sent += 1;
      now += 20;
    }
    // 2 s at 50/s plus the initial burst of 50
    expect(sent).toBeGreaterThanOrEqual(140);
    expect(sent).toBeLessThanOrEqual(150);
    expect(leaseSize(50)).toBe(5);
    expect(await pacer.acquire("ws_unlimited")).toBe(0);
  });

  it("applies the relay rate to every workspace together", async () => {
    const now = 0;
    const pacer = new Pacer(new MemoryPacing(() => now), { key: "relay", rate: 3 }, () => now);
    const waits = [];
    for (const ws of ["a", "b", "c", "d"]) waits.push(await pacer.acquire(ws));
    expect(waits.slice(0, 3)).toEqual([0, 0, 0]);
    expect(waits[3]).toBeGreaterThan(0);
  });

  it("keeps a bounded number of leases however many rate-limited workspaces send", async () => {
    let now = 0;
    const repo = new MemoryPacing(() => now);
    const pacer = new Pacer(repo, { key: "r", rate: 0 }, () => now);
    for (let i = 0; i < 3_000; i++) {
      await repo.setWorkspaceRate(`ws_${i}`, 100);
      expect(await pacer.acquire(`ws_${i}`)).toBe(0);
      now += 1;
    }
    expect(pacer.leaseCount).toBeLessThanOrEqual(1_000);
  });
});

describe("outcome helpers", () => {
  it("classifies replies: 5xx to RCPT/DATA bounce, everything else is transient", () => {
    expect(classifySmtpError(new SmtpFailure("550 no such user", 550, true)).kind).toBe("permanent");
    expect(classifySmtpError(new SmtpFailure("554 relay denied", 554, false)).kind).toBe("transient");
    expect(classifySmtpError(new SmtpFailure("451 later", 451, true)).kind).toBe("transient");
    expect(classifySmtpError(new Error("ECONNRESET"))).toMatchObject({ kind: "transient", code: 0 });
  });

  it("derives event ids from delivery, type and attempt", () => {
    expect(outcomeEventId("d1", "sent", 1)).toBe(outcomeEventId("d1", "sent", 1));
    expect(outcomeEventId("d1", "deferred", 1)).not.toBe(outcomeEventId("d1", "deferred", 2));
    expect(outcomeEventId("d1", "sent", 1)).toMatch(/^evt_[0-9a-f]{32}$/);
  });

  it("backs off exponentially with a cap", () => {
    expect([1, 2, 3, 4, 10].map((a) => retryDelayMs(a, 1_000, 5_000))).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });
});
