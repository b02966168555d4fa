import { describe, expect, it } from "vitest";
import { normalizeEmail, parseMailbox } from "./address.js";

/** What normalizeEmail answered before its fast path: the RFC 5322 parser's bare address, lower-cased. */
const parsed = (input: string) => {
  const box = parseMailbox(input);
  return !box || box.name ? undefined : box.address.toLowerCase();
};

describe("normalizeEmail", () => {
  it("answers as the full parser does, plain addresses taking the fast path included", () => {
    const cases = [
      "a@b.test", "A.B+c@Example.COM", "a..b@x.test", ".a@x.test", "a.@x.test", "a@-x.test", "a@x-.test", "a@x", "a b@x.test",
      "\"a\"@x.test", "a@[1.2.3.4]", "Ann <a@x.test>", " a@x.test ", "a@x..test", "a@1.2", `${"x".repeat(64)}@x.test`, `${"x".repeat(65)}@x.test`,
      `a@${"b".repeat(63)}.test`, `a@${"b".repeat(64)}.test`, "ü@x.test", "a@ü.test", "a@x.test.", "a@@x.test", "-a@x.test", "a-@x.test", "_@x.test",
      "a@x1-2.t3", `${"a".repeat(60)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.test`, "a@x.test\r\nBcc: b@y.test",
      ...[..."!#$%&'*+/=?^_`{|}~-"].map((ch) => `a${ch}b@x.test`),
    ];
    for (const input of cases) expect(normalizeEmail(input), JSON.stringify(input)).toBe(parsed(input));
  });
});
