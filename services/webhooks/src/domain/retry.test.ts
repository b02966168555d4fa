import { describe, expect, it } from "vitest";
import { retryDelayMs, RETRY_STEPS, scheduleSpanMs } from "./retry.js";

const HOUR = 3600_000;

describe("retry schedule", () => {
  it("goes 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 6 h, 7 h, 8 h with the default base", () => {
    const delays = RETRY_STEPS.map((_, step) => retryDelayMs(step, 5_000, () => 0.5));
    expect(delays).toEqual([5_000, 30_000, 120_000, 600_000, 1_800_000, HOUR, 2 * HOUR, 4 * HOUR, 6 * HOUR, 7 * HOUR, 8 * HOUR]);
    expect(retryDelayMs(RETRY_STEPS.length, 5_000)).toBeUndefined();
  });

  it("spans more than 24 h even with the shortest jitter, and under 32 h with the longest", () => {
    expect(scheduleSpanMs(5_000) / HOUR).toBeCloseTo(28.7, 1);
    const total = (random: () => number) => RETRY_STEPS.reduce((sum, _, step) => sum + retryDelayMs(step, 5_000, random)!, 0);
    expect(total(() => 0)).toBeGreaterThan(24 * HOUR);
    expect(total(() => 0.999999)).toBeLessThan(32 * HOUR);
  });

  it("jitters each delay by at most 10 %", () => {
    expect(retryDelayMs(0, 5_000, () => 0)).toBe(4_500);
    expect(retryDelayMs(0, 5_000, () => 1)).toBe(5_500);
  });

  it("scales with the configured base (tests use milliseconds)", () => {
    expect(retryDelayMs(1, 100, () => 0.5)).toBe(600);
  });
});
