import { describe, expect, it } from "vitest";
import { invalidRecipientMessage, mailboxAddress, parsedMailboxAddress } from "./validate.js";

describe("mailbox addresses", () => {
  it("takes plain addresses as they are and parses the rest (names, quotes, comments)", () => {
    expect(mailboxAddress("reader@example.test")).toBe("reader@example.test");
    expect(mailboxAddress("Ann.Lee+tag@Mail.Example.test")).toBe("Ann.Lee+tag@Mail.Example.test");
    expect(mailboxAddress("Ann <ann@example.test>")).toBe("ann@example.test");
    expect(mailboxAddress("ann@example.test (work)")).toBe("ann@example.test");
    expect(mailboxAddress("josé@exämple.test")).toBe("josé@exämple.test");
    for (const bad of ["", "nobody", "a@@b", ".a@b", "a.@b", "a..b@c", "a@b..c", "a@b.", "a b@c", "a@b, c@d", "<a@b"]) {
      expect(mailboxAddress(bad), bad).toBeUndefined();
    }
  });

  it("answers exactly as the RFC 5322 parser for any string (the fast path only skips work)", () => {
    // Deterministic pseudo-random strings over the characters that matter to the grammar.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const text = (alphabet: string, max: number) =>
      Array.from({ length: 1 + Math.floor(next() * max) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
    const samples = ["a@b", "a.b@c.d", "-@-", "a@b-c.d", "a+b@c", "{x}@y.z", "a@[127.0.0.1]", "\"a b\"@c.d"];
    for (let i = 0; i < 400; i++) {
      // Mostly address-shaped (many take the fast path), some with a character it must not accept.
      samples.push(`${text("aZ0.-+_!#$%&'*/=?^`{|}~", 8)}@${text("aZ0-.", 8)}`);
      samples.push(`${text("ab.@ \"()<>,;:\\[]é_", 6)}@${text("ab.-_é[]", 6)}`);
    }
    let fast = 0;
    for (const s of samples) {
      if (/^[^"()<>,;:\\[\] é]+$/.test(s) && mailboxAddress(s) === s) fast++;
      expect(mailboxAddress(s), JSON.stringify(s)).toBe(parsedMailboxAddress(s));
    }
    expect(fast).toBeGreaterThan(100);
  });

  it("says why a recipient is refused: an invalid address, or a list where one address goes", () => {
    expect(invalidRecipientMessage("ann@@example")).toBe('to is not a valid email address: "ann@@example"');
    expect(invalidRecipientMessage("nobody")).toBe('to is not a valid email address: "nobody"');
    expect(invalidRecipientMessage("a@example.test, b@example.test")).toMatch(/^to must be one email address, not a list \(got "a@example.test, b@example.test"\); .*POST \/v1\/emails\/batch/);
    expect(invalidRecipientMessage(" ")).toBe("to is required: one email address");
    expect(invalidRecipientMessage("x".repeat(1_000))).toMatch(/^to is not a valid email address: "x{100}"$/);
  });
});
