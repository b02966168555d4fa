import { createHmac, timingSafeEqual } from "node:crypto";
import { DELIVERY_ID_KEY } from "@mailroom/pipeline/relay-providers.js";
import type { ProviderReport } from "../../domain/model.js";
import { bareMessageId, dateOf, isObject, malformed, notAuthenticated, parseJson, replyCodesIn, text } from "./refusals.js";

/**
 * How old a signature may be. Mailgun retries a webhook for 8 hours; a day covers that with
 * room for clock skew while bounding replays (a replay inside it republishes the same event
 * ids and repeats an idempotent suppression).
 */
export const MAILGUN_SIGNATURE_MAX_AGE_MS = 24 * 3600_000;

export interface MailgunWebhook {
  signature: { timestamp: string; token: string; signature: string };
  eventData: Record<string, unknown>;
}

export function parseMailgun(body: Uint8Array): MailgunWebhook {
  const n = parseJson("mailgun", body);
  if (!isObject(n) || !isObject(n.signature) || !isObject(n["event-data"])) throw malformed("mailgun", "not a webhook ({ signature, event-data })");
  const s = n.signature;
  return { signature: { timestamp: text(s.timestamp), token: text(s.token), signature: text(s.signature) }, eventData: n["event-data"] };
}

/** HMAC-SHA256 of timestamp + token under the webhook signing key, hex, compared in constant time. */
export function checkMailgunSignature(webhook: MailgunWebhook, signingKey: string, now: Date): void {
  const { timestamp, token, signature } = webhook.signature;
  if (!timestamp || !token || !signature) throw notAuthenticated("mailgun", "unsigned");
  const expected = createHmac("sha256", signingKey).update(timestamp + token).digest();
  const given = /^[0-9a-f]+$/i.test(signature) ? Buffer.from(signature, "hex") : Buffer.alloc(0);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw notAuthenticated("mailgun", "the signature does not verify with MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY");
  }
  const ageMs = now.getTime() - Number(timestamp) * 1000;
  if (!Number.isFinite(ageMs) || Math.abs(ageMs) > MAILGUN_SIGNATURE_MAX_AGE_MS) throw notAuthenticated("mailgun", "the signature's timestamp is more than a day away");
}

/**
 * One Mailgun event. The delivery id is the variable delivery set (X-Mailgun-Variables →
 * user-variables), else message.headers.message-id. delivered → DELIVERED; failed with
 * severity temporary → a deferral (Mailgun retries the message itself and reports again:
 * delivered, or failed permanent once it gives up), other failures → a bounce (permanent:
 * hard, else soft); complained → complaint; others ignored.
 */
export function mailgunReports(webhook: MailgunWebhook): ProviderReport[] {
  const e = webhook.eventData;
  const variables = isObject(e["user-variables"]) ? e["user-variables"] : {};
  const message = isObject(e.message) ? e.message : {};
  const headers = isObject(message.headers) ? message.headers : {};
  const status = isObject(e["delivery-status"]) ? e["delivery-status"] : {};
  const base = { provider: "mailgun", deliveryId: text(variables[DELIVERY_ID_KEY]), messageId: bareMessageId(headers["message-id"]), recipient: text(e.recipient), occurredAt: dateOf(e.timestamp) };
  const event = text(e.event);
  switch (event) {
    case "delivered":
      return [{ ...base, kind: "delivered", smtpCode: Number(status.code) || 250, detail: text(status.message) || text(status.description) }];
    case "failed": {
      const diagnostic = text(status.message) || text(status.description) || text(e.reason) || "failed";
      const quoted = replyCodesIn(diagnostic);
      const code = Number(status.code);
      const codes = { status: text(status["enhanced-code"]) || quoted.status, smtpCode: code >= 200 && code < 600 ? code : quoted.smtpCode };
      if (text(e.severity) === "temporary") return [{ ...base, kind: "deferred", diagnostic, ...codes }];
      return [{ ...base, kind: "bounce", permanent: text(e.severity) === "permanent", diagnostic, ...codes }];
    }
    case "complained":
      return [{ ...base, kind: "complaint", feedbackType: "abuse", userAgent: "Mailgun" }];
    default:
      return [{ ...base, kind: "ignored", reason: `Mailgun ${event || "untyped"} event` }];
  }
}
