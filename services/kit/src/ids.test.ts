import { describe, expect, it } from "vitest";
import { decodeTime } from "ulidx";
import { newId, newMessageId } from "./ids.js";

describe("ids", () => {
  it("are prefixed, unique and sort by creation", () => {
    const ids = Array.from({ length: 5000 }, () => newId("trs"));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids.slice(0, 10)) expect(id).toMatch(/^trs_[0-9a-z]{26}$/);
    expect(Math.abs(decodeTime(ids[0].slice(4).toUpperCase()) - Date.now())).toBeLessThan(5_000);
  });

  it("spread their random part over the whole alphabet", () => {
    const chars = new Set(Array.from({ length: 2000 }, () => newId("x").slice(-16)).join(""));
    expect(chars.size).toBe(32);
  });

  it("makes Message-IDs on the sender's domain", () => {
    expect(newMessageId("acme.test")).toMatch(/^[0-9a-z]{26}@acme\.test$/);
    expect(newMessageId("")).toMatch(/@mailroom\.local$/);
  });
});
