import { describe, expect, it } from "vitest";
import { SmtpFailure } from "../../domain/ports.js";
import { mxMatches } from "./policy.js";
import { DomainRate } from "./rate.js";
import { groupByDomain } from "./transport.js";

describe("MTA-STS mx patterns (RFC 8461 §4.1)", () => {
  it("matches names exactly, and a wildcard for one leftmost label only", () => {
    expect(mxMatches("mx1.example.com", "mx1.example.com")).toBe(true);
    expect(mxMatches("MX1.Example.com.", "mx1.example.com")).toBe(true);
    expect(mxMatches("mx1.example.com", "*.example.com")).toBe(true);
    expect(mxMatches("a.mx1.example.com", "*.example.com")).toBe(false);
    expect(mxMatches("example.com", "*.example.com")).toBe(false);
    expect(mxMatches("mx1.example.net", "mx1.example.com")).toBe(false);
  });
});

describe("recipients by domain", () => {
  it("puts `to`'s domain first with `to` first, and drops repeated addresses", () => {
    expect(groupByDomain(["ann@a.test", "cy@b.test", "bo@A.test", "ANN@a.test", "dee@b.test"])).toEqual([
      ["a.test", ["ann@a.test", "bo@A.test"]],
      ["b.test", ["cy@b.test", "dee@b.test"]],
    ]);
  });
});

describe("DomainRate", () => {
  it("spaces sends at the rate and defers one that would wait too long", async () => {
    let now = 0;
    const rate = new DomainRate(10, 250, () => now);
    await rate.take("a.test"); // slot 0
    const waits: Promise<void>[] = [rate.take("a.test"), rate.take("a.test")]; // slots 100, 200
    const over = await rate.take("a.test").catch((e: unknown) => e); // slot 300 > 250 ms away
    expect(over).toBeInstanceOf(SmtpFailure);
    expect(over).toMatchObject({ code: 0, beforeData: true });
    now = 1_000;
    await Promise.all(waits);
    await rate.take("a.test");
  });
});
