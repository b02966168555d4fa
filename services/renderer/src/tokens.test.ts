import { describe, expect, it } from "vitest";
import { signToken } from "../../kit/src/tokens.js";
import {
  parseClickToken,
  parseRecipientToken,
  signLinkToken,
  signRecipientToken,
  trackingUrls,
  verifyClick,
} from "./tokens.js";

const SECRET = "token-secret-0123456789";
const recipient = { workspaceId: "ws_1", messageId: "m@x", email: "a@x.test", contactId: "ct_1", contentId: "cmp_1" };
const link = { contentId: "cmp_1", index: 3, url: "https://x.test/?a=1#f" };

describe("tracking tokens", () => {
  it("round-trip link and recipient tokens", () => {
    expect(parseClickToken(SECRET, signLinkToken(SECRET, link))).toEqual(link);
    expect(parseRecipientToken(SECRET, signRecipientToken(SECRET, recipient))).toEqual(recipient);
  });

  it("refuse tampered tokens and other secrets", () => {
    const token = signLinkToken(SECRET, link);
    const [body, mac] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ c: "cmp_1", i: 3, u: "https://evil.test" })).toString("base64url");
    expect(parseClickToken(SECRET, `${forged}.${mac}`)).toBeUndefined();
    expect(parseClickToken(SECRET, `${body}.${mac.slice(0, -1)}A`)).toBeUndefined();
    expect(parseClickToken("another-secret-0123456", token)).toBeUndefined();
    expect(parseClickToken(SECRET, "garbage")).toBeUndefined();
    expect(parseRecipientToken(SECRET, "")).toBeUndefined();
  });

  it("refuse a token of the other kind or with a non-http target", () => {
    expect(parseClickToken(SECRET, signRecipientToken(SECRET, recipient))).toBeUndefined();
    expect(parseRecipientToken(SECRET, signLinkToken(SECRET, link))).toBeUndefined();
    expect(parseClickToken(SECRET, signToken(SECRET, { c: "cmp_1", i: 0, u: "javascript:alert(1)" }))).toBeUndefined();
    expect(parseClickToken(SECRET, signToken(SECRET, { c: "cmp_1", i: -1, u: "https://x.test" }))).toBeUndefined();
  });

  it("verifyClick requires both halves from the same content", () => {
    const lt = signLinkToken(SECRET, link);
    expect(verifyClick(SECRET, lt, signRecipientToken(SECRET, recipient))).toEqual({ link, recipient });
    expect(verifyClick(SECRET, lt, signRecipientToken(SECRET, { ...recipient, contentId: "cmp_2" }))).toBeUndefined();
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
