import { describe, expect, it } from "vitest";
import { bucketLevel, secondsUntilFull, takeFromBucket } from "./token-bucket.js";

describe("token bucket arithmetic", () => {
  it("starts full, takes what it has, refills at the rate and never above the burst", () => {
    let t = takeFromBucket(undefined, 2, 5, 5, 0);
    expect(t).toMatchObject({ granted: 5, waitMs: 0 });
    t = takeFromBucket(t.state, 2, 5, 1, 0);
    expect(t).toMatchObject({ granted: 0, waitMs: 500 });
    t = takeFromBucket(t.state, 2, 5, 1, 500);
    expect(t.granted).toBe(1);
    expect(takeFromBucket(t.state, 2, 5, 10, 60_000).granted).toBe(5);
  });

  it("reports the level without taking, and when the bucket is full again", () => {
    const after = takeFromBucket(undefined, 1, 3, 3, 0).state;
    expect(bucketLevel(after, 1, 3, 0)).toEqual({ tokens: 0, waitMs: 1000 });
    expect(bucketLevel(after, 1, 3, 1500)).toEqual({ tokens: 1.5, waitMs: 0 });
    expect(bucketLevel(undefined, 1, 3, 0)).toEqual({ tokens: 3, waitMs: 0 });
    expect(secondsUntilFull(0, 1, 3)).toBe(3);
    expect(secondsUntilFull(2.5, 60 / 60, 3)).toBe(1);
    expect(secondsUntilFull(3, 1, 3)).toBe(0);
  });

  it("mints nothing when another process's clock is behind", () => {
    const state = takeFromBucket(undefined, 1, 2, 2, 10_000).state;
    expect(takeFromBucket(state, 1, 2, 1, 5_000).granted).toBe(0);
  });
});
