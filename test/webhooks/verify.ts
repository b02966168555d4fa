/**
 * Receiver-side verifiers written from the specs, independent of the service's code (the
 * `standardwebhooks` package is not installed):
 * - the official client's `webhooks.verifySignature(payload, signature, secret)`
 *   (sdk-wire-contract §9.3): hex HMAC-SHA256 of the raw body, keyed by the secret's UTF-8;
 * - Standard Webhooks (spec/standard-webhooks.md): `webhook-signature` is a space-separated
 *   list of `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed by
 *   the base64-decoded part of the `whsec_` secret; the timestamp must be recent.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export function verifyClientSignature(payload: string, signature: string, secret: string): boolean {
  const expected = createHmac("sha256", secret).update(payload).digest("hex");
  const a = Buffer.from(expected, "utf8");
  const b = Buffer.from(signature ?? "", "utf8");
  return a.length === b.length && timingSafeEqual(a, b);
}

const TOLERANCE_SECONDS = 5 * 60;

export function verifyStandardWebhook(body: string, headers: Record<string, string | string[] | undefined>, secret: string, nowMs = Date.now()): boolean {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowMs / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  if (!secret.startsWith("whsec_")) return false;
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(" ").some((entry) => {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value) return false;
    const given = Buffer.from(value, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
