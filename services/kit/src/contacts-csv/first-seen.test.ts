import { describe, expect, it } from "vitest";
import { FirstSeen } from "./first-seen.js";

describe("FirstSeen", () => {
  it("remembers the first line of each key through growth", () => {
    const seen = new FirstSeen(16);
    for (let i = 0; i < 50_000; i++) expect(seen.firstLine(`user${i}@example.test`, i + 2)).toBeUndefined();
    expect(seen.size).toBe(50_000);
    for (let i = 0; i < 50_000; i += 997) expect(seen.firstLine(`user${i}@example.test`, 999_999)).toBe(i + 2);
    expect(seen.size).toBe(50_000);
  });

  it("stays small for a million keys", () => {
    const seen = new FirstSeen();
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 1_000_000; i++) seen.firstLine(`someone.${i}@example.test`, i + 2);
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(seen.size).toBe(1_000_000);
    expect(grown).toBeLessThan(40 * 1024 * 1024);
  }, 60_000);
});
