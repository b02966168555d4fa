import { describe, expect, it } from "vitest";
import { Reader, Writer } from "./token-codec.js";

const ULID = "01jd8v6k2m3n4p5q6r7s8t9v0w";

function roundTrip(id: string): { back: string; bytes: number } {
  const w = new Writer();
  w.id(id);
  const bytes = w.bytes();
  const r = new Reader(Buffer.from(bytes));
  const back = r.id();
  expect(r.done).toBe(true);
  return { back, bytes: bytes.length };
}

describe("token codec", () => {
  it("packs prefixed and bare ULIDs into 17 bytes and keeps everything else literal", () => {
    expect(roundTrip(`ws_${ULID}`)).toEqual({ back: `ws_${ULID}`, bytes: 17 });
    expect(roundTrip(`ctc_${ULID}`)).toEqual({ back: `ctc_${ULID}`, bytes: 17 });
    expect(roundTrip(ULID)).toEqual({ back: ULID, bytes: 17 });
    expect(roundTrip(`${ULID}@example.com`)).toEqual({ back: `${ULID}@example.com`, bytes: 17 + 1 + 11 });
    expect(roundTrip("")).toEqual({ back: "", bytes: 1 });
    // Not canonical (upper case, unknown prefix, first character past 7): literal, exact.
    for (const odd of [`ws_${ULID.toUpperCase()}`, `zz_${ULID}`, `ws_8${ULID.slice(1)}`, "ünï", "x".repeat(300)]) {
      expect(roundTrip(odd).back).toBe(odd);
    }
    expect(roundTrip("x".repeat(300)).bytes).toBe(3 + 300);
  });

  it("round-trips varints and refuses truncated input", () => {
    const w = new Writer();
    for (const n of [0, 127, 128, 300, 2 ** 40]) w.varint(n);
    w.id(`trs_${ULID}`);
    const bytes = Buffer.from(w.bytes());
    const r = new Reader(bytes);
    expect([0, 1, 2, 3, 4].map(() => r.varint())).toEqual([0, 127, 128, 300, 2 ** 40]);
    expect(r.id()).toBe(`trs_${ULID}`);
    const cut = new Reader(bytes.subarray(0, bytes.length - 1));
    for (let i = 0; i < 5; i++) cut.varint();
    expect(() => cut.id()).toThrow(RangeError);
  });
});
