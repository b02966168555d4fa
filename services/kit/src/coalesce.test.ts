import { describe, expect, it } from "vitest";
import { Coalescer } from "./coalesce.js";

describe("Coalescer", () => {
  it("sends the first call at once and the calls that arrive meanwhile together, per key", async () => {
    const rounds: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const c = new Coalescer<number, number>(async (key, items) => {
      rounds.push(`${key}:${items.join(",")}`);
      await gate;
      return items.map((n) => n * 10);
    });
    const first = [c.run("a", 1), c.run("b", 4)];
    await Promise.resolve(); // the first rounds go out
    const answers = Promise.all([first[0], c.run("a", 2), c.run("a", 3), first[1]]);
    expect(rounds).toEqual(["a:1", "b:4"]);
    open();
    expect(await answers).toEqual([10, 20, 30, 40]);
    expect(rounds).toEqual(["a:1", "b:4", "a:2,3"]);
    // Idle again: the next call goes out on its own.
    expect(await c.run("a", 5)).toBe(50);
    expect(rounds.at(-1)).toBe("a:5");
  });

  it("sends calls made in one synchronous run as one round", async () => {
    const rounds: number[][] = [];
    const c = new Coalescer<number, number>(async (_key, items) => {
      rounds.push(items);
      return items;
    });
    await Promise.all([1, 2, 3].map((n) => c.run("a", n)));
    expect(rounds).toEqual([[1, 2, 3]]);
  });

  it("hands a failed round's error to its callers only", async () => {
    let calls = 0;
    const c = new Coalescer<number, number>(async (_key, items) => {
      if (calls++ === 0) throw new Error("down");
      return items;
    });
    const first = c.run("a", 1);
    await Promise.resolve(); // the first round goes out
    const second = c.run("a", 2);
    await expect(first).rejects.toThrow("down");
    expect(await second).toBe(2);
  });
});
