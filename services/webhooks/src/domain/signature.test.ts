import { describe, expect, it } from "vitest";
import { deliveryHeaders, legacySignature, standardWebhooksKey, standardWebhooksSecretOf, standardWebhooksSignature } from "./signature.js";

describe("webhook signatures", () => {
  it("X-SMASHSEND-SIGNATURE is the lowercase hex HMAC-SHA256 of the raw body keyed by the token (RFC 4231-style known vector)", () => {
    // HMAC_SHA256("key", "The quick brown fox jumps over the lazy dog"), the widely published vector.
    expect(legacySignature("key", "The quick brown fox jumps over the lazy dog")).toBe(
      "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
    );
  });

  it("webhook-signature matches the Standard Webhooks reference vector", () => {
    // The vector the Standard Webhooks / Svix libraries test against.
    expect(standardWebhooksSignature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });

  it("a whsec_ token keys Standard Webhooks with its decoded bytes; any other token with its UTF-8 bytes", () => {
    const generated = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    expect(standardWebhooksKey(generated)).toEqual(Buffer.alloc(32, 7));
    expect(standardWebhooksSecretOf(generated)).toBe(generated);
    expect(standardWebhooksKey("my-own-secret")).toEqual(Buffer.from("my-own-secret"));
    expect(standardWebhooksSecretOf("my-own-secret")).toBe(`whsec_${Buffer.from("my-own-secret").toString("base64")}`);
    // whsec_ followed by something that is not 24–64 bytes of base64 is just a string.
    expect(standardWebhooksKey("whsec_short")).toEqual(Buffer.from("whsec_short"));
  });

  it("every attempt carries both signatures, the delivery id and the attempt's unix time", () => {
    const body = '{"id":"evt_1","type":"EMAIL_SENT"}';
    const at = new Date("2030-01-15T12:00:00.900Z");
    const h = deliveryHeaders("tok", "whd_1", body, at);
    expect(h).toEqual({
      "content-type": "application/json",
      "user-agent": "Mailroom-Webhooks/1",
      "X-SMASHSEND-SIGNATURE": legacySignature("tok", body),
      "webhook-id": "whd_1",
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": standardWebhooksSignature("tok", "whd_1", Math.floor(at.getTime() / 1000), body),
    });
    expect(h["X-SMASHSEND-SIGNATURE"]).toMatch(/^[0-9a-f]{64}$/);
  });
});
