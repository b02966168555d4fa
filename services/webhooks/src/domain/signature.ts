import { createHmac } from "node:crypto";

/**
 * The two signatures every delivery carries.
 *
 * 1. `X-SMASHSEND-SIGNATURE` (sdk-wire-contract §9.3, what the official client's
 *    `webhooks.verifySignature(payload, signature, secret)` checks): lowercase hex
 *    HMAC-SHA256 of the raw body bytes, keyed with the token's UTF-8 bytes.
 * 2. Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`):
 *    HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed with the Standard Webhooks secret's bytes.
 *
 * How a token maps to a Standard Webhooks secret: a token of the form `whsec_<base64>`
 * (what we generate) IS the Standard Webhooks secret, the key being the decoded bytes;
 * any other token (given by the caller) is keyed by its UTF-8 bytes, i.e. its Standard
 * Webhooks secret is `whsec_` + base64(token). `standardWebhooksSecretOf` gives it.
 */
export const LEGACY_SIGNATURE_HEADER = "X-SMASHSEND-SIGNATURE";
const WHSEC = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function legacySignature(token: string, body: string): string {
  return createHmac("sha256", Buffer.from(token, "utf8")).update(Buffer.from(body, "utf8")).digest("hex");
}

/** The key bytes Standard Webhooks signatures use for this token. */
export function standardWebhooksKey(token: string): Buffer {
  if (token.startsWith(WHSEC)) {
    const encoded = token.slice(WHSEC.length);
    if (encoded.length % 4 === 0 && BASE64.test(encoded)) {
      const key = Buffer.from(encoded, "base64");
      if (key.length >= 24 && key.length <= 64) return key;
    }
  }
  return Buffer.from(token, "utf8");
}

/** The `whsec_…` secret a Standard Webhooks library verifies this token's deliveries with. */
export function standardWebhooksSecretOf(token: string): string {
  return `${WHSEC}${standardWebhooksKey(token).toString("base64")}`;
}

export function standardWebhooksSignature(token: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac("sha256", standardWebhooksKey(token)).update(`${id}.${timestampSeconds}.${body}`, "utf8").digest("base64");
  return `v1,${mac}`;
}

/** Every header of one attempt (the timestamp is the attempt's, the id the delivery's). */
export function deliveryHeaders(token: string, deliveryId: string, body: string, at: Date): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    "content-type": "application/json",
    "user-agent": "Mailroom-Webhooks/1",
    [LEGACY_SIGNATURE_HEADER]: legacySignature(token, body),
    "webhook-id": deliveryId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardWebhooksSignature(token, deliveryId, timestamp, body),
  };
}
