import { describe, expect, it } from "vitest";
import { signToken } from "@mailroom/kit/tokens.js";
import { parseSignupToken, signSignupToken } from "./signup-tokens.js";

const config = { secret: "signup-test-secret-0123456789" };
const ref = { workspaceId: "ws_a", formId: "frm_01", contactId: "ctc_01", email: "ann@example.test", expiresAt: Date.parse("2030-01-01T00:00:00Z") };

describe("signup confirmation tokens", () => {
  it("round-trip, expire, and survive a secret rotation", () => {
    const token = signSignupToken(config, ref);
    expect(parseSignupToken(config, token, Date.parse("2029-12-31T00:00:00Z"))).toEqual(ref);
    expect(parseSignupToken(config, token, Date.parse("2030-01-02T00:00:00Z"))).toBe("expired");
    expect(parseSignupToken({ secret: "a-new-secret-0123456789abcdef", previousSecret: config.secret }, token, 0)).toEqual(ref);
    expect(parseSignupToken({ secret: "a-new-secret-0123456789abcdef" }, token, 0)).toBeUndefined();
  });

  it("refuse a changed payload, a changed or lengthened MAC, and a token signed with the raw secret (another kind)", () => {
    const token = signSignupToken(config, ref);
    const [body, mac] = token.split(".");
    const payload = JSON.parse(Buffer.from(body!, "base64url").toString());
    const other = Buffer.from(JSON.stringify({ ...payload, c: "ctc_02" })).toString("base64url");
    expect(parseSignupToken(config, `${other}.${mac}`, 0)).toBeUndefined();
    expect(parseSignupToken(config, `${body}.${mac!.slice(0, -1)}${mac!.endsWith("A") ? "B" : "A"}`, 0)).toBeUndefined();
    expect(parseSignupToken(config, `${token}x`, 0)).toBeUndefined();
    // kit/tokens under MAILROOM_SECRET itself (the legacy tracking format) is not a signup token.
    expect(parseSignupToken(config, signToken(config.secret, payload), 0)).toBeUndefined();
    expect(parseSignupToken(config, "", 0)).toBeUndefined();
  });
});
