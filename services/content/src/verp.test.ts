import { describe, expect, it } from "vitest";
import {
  bounceDomainFor,
  isPerDomainBounceDomain,
  MAX_LOCAL_PART,
  MAX_VERP_DELIVERY_ID_BYTES,
  parseVerpAddress,
  parseVerpToken,
  verpAddress,
  verpToken,
} from "./verp.js";

const SECRET = "verp-secret-0123456789";
const TRS_ID = "trs_01jd5m3v8k2x9q7w4e6r1t0y3u";

describe("VERP return paths", () => {
  it("round-trips a transactional delivery id inside a 64-octet local part", () => {
    expect(MAX_VERP_DELIVERY_ID_BYTES).toBe(30);
    const address = verpAddress(SECRET, TRS_ID, "Bounces.Mailroom.Test")!;
    expect(address).toMatch(/^bounces\+[a-z2-7]+@bounces\.mailroom\.test$/);
    expect(address.split("@")[0].length).toBeLessThanOrEqual(MAX_LOCAL_PART);
    expect(parseVerpAddress(SECRET, address)).toEqual({ deliveryId: TRS_ID, domain: "bounces.mailroom.test" });
    // Angle brackets (a Return-Path header) and MTAs that fold the case of local parts.
    expect(parseVerpAddress(SECRET, `<${address.toUpperCase()}>`)?.deliveryId).toBe(TRS_ID);
  });

  it("is opaque: the token does not show the id in clear", () => {
    expect(verpToken(SECRET, TRS_ID)).not.toContain("trs_");
  });

  it("refuses tokens that were tampered with, signed under another secret, or malformed", () => {
    const token = verpToken(SECRET, TRS_ID)!;
    const flipped = token.slice(0, 10) + (token[10] === "a" ? "b" : "a") + token.slice(11);
    expect(parseVerpToken(SECRET, flipped)).toBeUndefined();
    expect(parseVerpToken("another-secret-0123456789", token)).toBeUndefined();
    expect(parseVerpToken(SECRET, token.slice(0, -1))).toBeUndefined();
    expect(parseVerpToken(SECRET, "not+base32!")).toBeUndefined();
    expect(parseVerpToken(SECRET, "")).toBeUndefined();
    expect(parseVerpAddress(SECRET, `postmaster@bounces.test`)).toBeUndefined();
    expect(parseVerpAddress(SECRET, `bounces+${token}`)).toBeUndefined();
  });

  it("gives no address to ids that do not fit, so the caller keeps the plain sender", () => {
    expect(verpAddress(SECRET, "x".repeat(31), "b.test")).toBeUndefined();
    expect(verpAddress(SECRET, "", "b.test")).toBeUndefined();
    expect(verpAddress(SECRET, TRS_ID, "")).toBeUndefined();
    expect(parseVerpAddress(SECRET, verpAddress(SECRET, "x".repeat(30), "b.test")!)?.deliveryId).toBe("x".repeat(30));
    expect(parseVerpAddress(SECRET, verpAddress(SECRET, "d", "b.test")!)?.deliveryId).toBe("d");
  });

  it("uses the configured bounce domain, else bounces.<sender domain> (never the sender's own: its MX is the customer's)", () => {
    expect(bounceDomainFor("Bounce.Mailroom.Test ", "team@acme.test")).toBe("bounce.mailroom.test");
    expect(bounceDomainFor(undefined, "team@Acme.Test")).toBe("bounces.acme.test");
    expect(bounceDomainFor(undefined, "Acme.Test")).toBe("bounces.acme.test");
    expect(bounceDomainFor(undefined, "news@bounces.acme.test")).toBe("bounces.acme.test");
    expect(bounceDomainFor("", "nobody")).toBe("");
    expect(isPerDomainBounceDomain("bounces.acme.test")).toBe(true);
    expect(isPerDomainBounceDomain("bounces.test")).toBe(false);
    expect(isPerDomainBounceDomain("acme.test")).toBe(false);
  });
});
