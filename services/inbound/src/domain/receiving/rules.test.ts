import { describe, expect, it } from "vitest";
import type { InboundRuleRecord } from "./model.js";
import { matchRule, normalizeDomain, validateRule } from "./rules.js";

const rule = (match: string): InboundRuleRecord => ({
  id: `inr_${match}`, workspaceId: "ws_a", domainId: "ind_1", match, action: "store", forwardTo: "", createdAt: new Date(0),
});

describe("inbound rules", () => {
  it("picks the most specific rule: exact, then local+*, then *", () => {
    const rules = [rule("*"), rule("reply+*"), rule("support"), rule("reply")];
    expect(matchRule(rules, "Support")).toMatchObject({ rule: { match: "support" }, mailboxHash: "" });
    expect(matchRule(rules, "reply+Ab12")).toMatchObject({ rule: { match: "reply+*" }, mailboxHash: "Ab12" });
    expect(matchRule(rules, "reply")).toMatchObject({ rule: { match: "reply" }, mailboxHash: "" });
    expect(matchRule(rules, "sales")).toMatchObject({ rule: { match: "*" }, mailboxHash: "" });
    // The catch-all hands a plus-address's tag over too.
    expect(matchRule(rules, "sales+q4")).toMatchObject({ rule: { match: "*" }, mailboxHash: "q4" });
    expect(matchRule([rule("support")], "sales")).toBeUndefined();
    expect(matchRule([rule("reply+*")], "reply")).toBeUndefined();
  });

  it("validates matches, actions and forward addresses", () => {
    expect(validateRule({ match: " Support ", action: "WEBHOOK", forwardTo: "" })).toEqual({ match: "support", action: "webhook", forwardTo: "" });
    expect(validateRule({ match: "reply+*", action: "forward", forwardTo: "Team@Other.test" })).toEqual({ match: "reply+*", action: "forward", forwardTo: "team@other.test" });
    for (const match of ["", "a*b", "+*", "a+b+*", "a b", ".a", "x".repeat(65)]) {
      expect(() => validateRule({ match, action: "store", forwardTo: "" }), match).toThrow(expect.objectContaining({ code: "invalid_inbound_rule", httpStatus: 400 }));
    }
    expect(() => validateRule({ match: "*", action: "bounce", forwardTo: "" })).toThrow(/action must be one of/);
    expect(() => validateRule({ match: "*", action: "forward", forwardTo: "not-an-address" })).toThrow(/forwardTo must be an email address/);
    expect(() => validateRule({ match: "*", action: "store", forwardTo: "a@b.test" })).toThrow(/only for a forward rule/);
  });

  it("normalises domains and refuses what is not one, or Mailroom's own host", () => {
    expect(normalizeDomain(" In.Example.TEST. ")).toBe("in.example.test");
    expect(normalizeDomain("bücher.example")).toBe("xn--bcher-kva.example");
    for (const bad of ["", "localhost", "a..b", "-a.test", "1.2.3.4", "a_b.test", "a".repeat(64) + ".test"]) {
      expect(() => normalizeDomain(bad), bad).toThrow(expect.objectContaining({ code: "invalid_inbound_domain", httpStatus: 400 }));
    }
    expect(() => normalizeDomain("MX.mailroom.test", ["mx.mailroom.test"])).toThrow(/Mailroom's own host/);
  });
});
