import { describe, expect, it } from "vitest";
import { signToken } from "@mailroom/kit/tokens.js";
import {
  parseClickToken,
  parseRecipientToken,
  recipientTokenIssuedAt,
  signLinkToken,
  signRecipientToken,
  trackingUrls,
  verifyClick,
} from "./tokens.js";

const SECRET = "token-secret-0123456789";
const recipient = { workspaceId: "ws_1", messageId: "ct_1.cmp_1@x", email: "a@x.test", contactId: "ct_1", contentId: "cmp_1" };
const link = { contentId: "cmp_1", index: 3, url: "https://x.test/?a=1#f" };

/** What the system issues: prefixed ULIDs and a ULID Message-ID. */
const typical = {
  workspaceId: "ws_01jd8v6k2m3n4p5q6r7s8t9v0w",
  contentId: "trs_01jd8v6k9x8y7z6a5b4c3d2e1f",
  contactId: "",
  messageId: "01jd8v6ka0b1c2d3e4f5g6h7j8@example.com",
  email: "ann.example@example.com",
};
const broadcastRecipient = {
  ...typical,
  contentId: "cmp_01jd8v6k9x8y7z6a5b4c3d2e1f",
  contactId: "ctc_01jd8v6kb9c8d7e6f5g4h3j2k1",
  // The broadcast's own Message-ID for this contact (broadcast's messageIdOf).
  messageId: "ctc_01jd8v6kb9c8d7e6f5g4h3j2k1.cmp_01jd8v6k9x8y7z6a5b4c3d2e1f@example.com",
};

/** What a format-3 token gives back: everything but the Message-ID. */
const read = <T extends { messageId: string }>(r: T): T => ({ ...r, messageId: "" });

/** Format 1 as issued until format 2: readable JSON + HMAC. */
const legacyRecipient = (secret: string, r: typeof recipient) =>
  signToken(secret, { w: r.workspaceId, m: r.messageId, e: r.email, k: r.contactId, c: r.contentId });
const legacyLink = (secret: string, l: typeof link) => signToken(secret, { c: l.contentId, i: l.index, u: l.url });

/** Flips one bit of the decoded token at `byte` (negative: from the end). */
function flip(token: string, byte: number): string {
  const raw = Buffer.from(token, "base64url");
  raw[byte < 0 ? raw.length + byte : byte] ^= 0x01;
  return raw.toString("base64url");
}

describe("tracking tokens", () => {
  it("issue the same bytes for the same link as every earlier release (links in delivered mail keep their token)", () => {
    // Computed with the first format-3 implementation; a change to how tokens are computed must keep it.
    const token = signLinkToken(SECRET, { contentId: "em_01JABCDEFGHJKMNPQRSTVWXYZ0", index: 2, url: "https://acme.test/orders/1234?x=1" });
    expect(token).toBe("Mhohg7JNd6QwZ6fnR7LyIuukA1jrbKvQ-MS-2D2_Ac4LgvGPtj9TH8H5uqPRGuIER81Hk0Xw6zHyV-MWrdBJLytk18_154AgQ2nvYcc");
  });

  it("round-trip link and recipient tokens", () => {
    expect(parseClickToken(SECRET, signLinkToken(SECRET, link))).toEqual(link);
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, recipient))).toEqual(read(recipient));
    for (const r of [typical, broadcastRecipient]) expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, r))).toEqual(read(r));
    const odd = { workspaceId: "WS_UPPER", messageId: "<1.bench@mail.example.com>", email: "ünï@exämple.test", contactId: "ctc_01JD8V6KB9C8D7E6F5G4H3J2K1", contentId: "x".repeat(300) };
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, odd))).toEqual(read(odd));
  });

  it("name a broadcast's test sends as such (their Message-ID is not the broadcast's own)", () => {
    const testSend = { ...broadcastRecipient, messageId: "01jd8v6ka0b1c2d3e4f5g6h7j8@example.com" };
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, testSend))).toEqual({ ...read(testSend), testSend: true });
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, { ...broadcastRecipient, contactId: "" }))?.testSend).toBe(true);
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, broadcastRecipient))?.testSend).toBeUndefined();
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, typical))?.testSend).toBeUndefined();
  });

  it("are opaque: no address, id or URL readable in them", () => {
    const token = signRecipientToken(SECRET, broadcastRecipient);
    const decoded = Buffer.from(token, "base64url").toString("latin1");
    for (const text of ["ann.example", "example.com", "01jd8v6k", "ws_", "ctc_"]) {
      expect(token).not.toContain(text);
      expect(decoded).not.toContain(text);
    }
    const lt = signLinkToken(SECRET, { contentId: typical.contentId, index: 0, url: "https://acme.test/pricing" });
    expect(Buffer.from(lt, "base64url").toString("latin1")).not.toContain("acme");
    // Deterministic: the same recipient gets the same token (a re-merge carries the same
    // links); one character more of input gives an unrelated one.
    expect(signRecipientToken(SECRET, broadcastRecipient)).toBe(token);
    const other = signRecipientToken(SECRET, { ...broadcastRecipient, email: "ann.example@example.co" });
    const sameChars = [...other].filter((c, i) => token[i] === c).length;
    expect(sameChars).toBeLessThan(20);
  });

  it("refuse tampered, truncated and foreign tokens", () => {
    const lt = signLinkToken(SECRET, link);
    const rt = signRecipientToken(SECRET, recipient);
    const length = Buffer.from(lt, "base64url").length;
    for (let byte = 0; byte < length; byte++) expect(parseClickToken(SECRET, flip(lt, byte)), `bit flipped in byte ${byte}`).toBeUndefined();
    for (const cut of [1, 4, 16, 30]) {
      expect(parseClickToken(SECRET, lt.slice(0, -cut))).toBeUndefined();
      expect(parseRecipientToken(SECRET, rt.slice(0, -cut))).toBeUndefined();
    }
    expect(parseRecipientToken(SECRET, rt + "A")).toBeUndefined();
    expect(parseRecipientToken(SECRET, rt.slice(0, 10) + "!" + rt.slice(10))).toBeUndefined();
    expect(parseClickToken("another-secret-0123456", lt)).toBeUndefined();
    expect(parseRecipientToken("another-secret-0123456", rt)).toBeUndefined();
    expect(parseClickToken(SECRET, "garbage")).toBeUndefined();
    expect(parseRecipientToken(SECRET, "")).toBeUndefined();
    expect(parseRecipientToken(SECRET, "A".repeat(10_000))).toBeUndefined();
  });

  it("refuse a token of the other kind or with a non-http target", () => {
    expect(parseClickToken(SECRET, signRecipientToken(SECRET, recipient))).toBeUndefined();
    expect(parseRecipientToken(SECRET, signLinkToken(SECRET, link))).toBeUndefined();
    expect(parseClickToken(SECRET, signLinkToken(SECRET, { ...link, url: "javascript:alert(1)" }))).toBeUndefined();
  });

  it("verifyClick requires both halves from the same content", () => {
    const lt = signLinkToken(SECRET, link);
    expect(verifyClick(SECRET, lt, signRecipientToken(SECRET, recipient))).toEqual({ link, recipient: read(recipient) });
    expect(verifyClick(SECRET, lt, signRecipientToken(SECRET, { ...recipient, contentId: "cmp_2" }))).toBeUndefined();
  });

  it("verify with every secret given, issue with the first (rotation)", () => {
    const OLD = "old-token-secret-0123456789";
    const rt = signRecipientToken(OLD, recipient);
    expect(parseRecipientToken([SECRET, OLD], rt)).toEqual(read(recipient));
    expect(parseRecipientToken(SECRET, rt)).toBeUndefined();
    expect(parseRecipientToken(SECRET, signRecipientToken([SECRET, OLD], recipient))).toEqual(read(recipient));
    expect(parseRecipientToken([SECRET, OLD], legacyRecipient(OLD, recipient))).toEqual(recipient);
  });

  it("carry the day they were issued", () => {
    const at = Date.UTC(2026, 10, 22, 15, 30);
    expect(recipientTokenIssuedAt(SECRET, signRecipientToken(SECRET, recipient, at))).toEqual(new Date(Date.UTC(2026, 10, 22)));
  });

  it("builds the public URLs", () => {
    const urls = trackingUrls("https://m.test/", "RT");
    expect(urls).toMatchObject({
      open: "https://m.test/t/o/RT",
      unsubscribe: "https://m.test/u/RT",
      listUnsubscribe: "https://m.test/u/RT",
      manage: "https://m.test/u/RT?manage=1",
    });
    expect(urls.click("LT")).toBe("https://m.test/t/c/LT/RT");
  });
});

describe("format-1 tokens already in sent mail (JSON + HMAC) keep working", () => {
  it("verify links and recipients", () => {
    expect(parseClickToken(SECRET, legacyLink(SECRET, link))).toEqual(link);
    expect(parseRecipientToken(SECRET, legacyRecipient(SECRET, recipient))).toEqual(recipient);
    expect(verifyClick(SECRET, legacyLink(SECRET, link), legacyRecipient(SECRET, recipient))).toEqual({ link, recipient });
    // Halves of different formats from the same content still pair up.
    expect(verifyClick(SECRET, signLinkToken(SECRET, link), legacyRecipient(SECRET, recipient))).toEqual({ link, recipient });
    expect(verifyClick(SECRET, legacyLink(SECRET, link), signRecipientToken(SECRET, recipient))).toEqual({ link, recipient: read(recipient) });
  });

  it("refuse tampered ones and other secrets", () => {
    const token = legacyLink(SECRET, link);
    const [body, mac] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ c: "cmp_1", i: 3, u: "https://evil.test" })).toString("base64url");
    expect(parseClickToken(SECRET, `${forged}.${mac}`)).toBeUndefined();
    expect(parseClickToken(SECRET, `${body}.${mac.slice(0, -1)}A`)).toBeUndefined();
    expect(parseClickToken("another-secret-0123456", token)).toBeUndefined();
  });

  it("refuse the other kind and non-http targets", () => {
    expect(parseClickToken(SECRET, legacyRecipient(SECRET, recipient))).toBeUndefined();
    expect(parseRecipientToken(SECRET, legacyLink(SECRET, link))).toBeUndefined();
    expect(parseClickToken(SECRET, signToken(SECRET, { c: "cmp_1", i: 0, u: "javascript:alert(1)" }))).toBeUndefined();
    expect(parseClickToken(SECRET, signToken(SECRET, { c: "cmp_1", i: -1, u: "https://x.test" }))).toBeUndefined();
  });
});

describe("token length", () => {
  const lengthFor = (email: string, r = typical) => signRecipientToken(SECRET, { ...r, email }).length;
  const addressOf = (n: number) => `${"a".repeat(n - "@example.com".length)}@example.com`;
  /** The longest address whose token stays within a budget of characters. */
  const longestWithin = (budget: number, r = typical) => {
    let longest = 0;
    for (let n = "a@example.com".length; n <= 200; n++) if (lengthFor(addressOf(n), r) <= budget) longest = n;
    return longest;
  };
  const base64Chars = (bytes: number) => Math.ceil((bytes * 4) / 3);

  it("keeps typical recipient tokens under 120 characters, and grows by 4 characters per 3 bytes of address", () => {
    const measured = {
      transactional23: lengthFor("ann.example@example.com"),
      broadcast23: lengthFor("ann.example@example.com", broadcastRecipient),
      transactional40: lengthFor(addressOf(40)),
      format1transactional23: legacyRecipient(SECRET, { ...typical, email: "ann.example@example.com" }).length,
    };
    console.log("recipient token lengths", measured);
    // 13 bytes of framing (header, synthetic IV), 2 issued-day, ids packed as 17-byte ULIDs
    // (an absent contact 1 byte): 13 + 2 + 17 + 17 + 1 = 50 bytes before a transactional
    // address, 66 before a broadcast one.
    expect(measured.transactional23).toBe(base64Chars(50 + 23));
    expect(measured.transactional23).toBeLessThanOrEqual(100);
    expect(measured.broadcast23).toBe(base64Chars(66 + 23));
    expect(measured.broadcast23).toBeLessThan(120);
    expect(measured.transactional23).toBeLessThan(measured.format1transactional23 * 0.45);
    // Within 120 characters: transactional addresses up to 40 characters, broadcast ones up to 24.
    expect(longestWithin(120)).toBe(40);
    expect(longestWithin(120, broadcastRecipient)).toBe(24);
    expect(longestWithin(100)).toBe(25);
    // Any address works; a longer one only makes a longer token.
    const long = `${"x".repeat(200)}@example.com`;
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, { ...typical, email: long }))?.email).toBe(long);
    expect(lengthFor(long)).toBe(base64Chars(50 + long.length));
  });

  it("keeps both halves of a typical click URL under 120 characters", () => {
    // The click URL is /t/c/<link token>/<recipient token>: the link token is issued once per
    // link at compile time (content id, link index, URL), the recipient token is the one above.
    const url = "https://acme.test/pricing?plan=pro";
    const linkToken = signLinkToken(SECRET, { contentId: broadcastRecipient.contentId, index: 12, url });
    const recipientToken = signRecipientToken(SECRET, broadcastRecipient);
    console.log("click token lengths", { link: linkToken.length, recipient: recipientToken.length, url: url.length });
    // 13 framing + 17 content id + 1 index byte + the URL.
    expect(linkToken.length).toBe(base64Chars(31 + url.length));
    expect(linkToken.length).toBeLessThan(120);
    expect(recipientToken.length).toBeLessThan(120);
    expect(verifyClick(SECRET, linkToken, recipientToken)?.link.url).toBe(url);
    // URLs up to 58 characters keep the link token within 120.
    expect(base64Chars(31 + 58)).toBeLessThanOrEqual(120);
    expect(signLinkToken(SECRET, { contentId: broadcastRecipient.contentId, index: 12, url: `https://acme.test/${"p".repeat(58 - 18)}` }).length).toBe(119);
  });
});
