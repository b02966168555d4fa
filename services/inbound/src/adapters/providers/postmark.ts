import { timingSafeEqual } from "node:crypto";
import { DELIVERY_ID_KEY } from "@mailroom/pipeline/relay-providers.js";
import type { ProviderReport } from "../../domain/model.js";
import { dateOf, isObject, malformed, notAuthenticated, parseJson, replyCodesIn, text } from "./refusals.js";

/** Bounce types that say the address is bad (the others that fail a message are soft). */
const HARD = new Set(["HardBounce", "BadEmailAddress"]);
/**
 * Bounce types that are failures of this message, worth a soft bounce. Postmark reports a
 * SoftBounce or Transient ("Undeliverable") once it has stopped retrying the message
 * (postmarkapp.com/support/article/1159-how-to-fix-soft-bounces): final, not a deferral.
 */
const SOFT = new Set(["SoftBounce", "Transient", "DnsError", "Blocked", "SpamNotification", "DMARCPolicy", "Unknown"]);

/**
 * Postmark signs nothing: its webhook URL carries HTTP basic auth (https://user:password@…),
 * compared here with MAILROOM_POSTMARK_WEBHOOK_AUTH in constant time.
 */
export function checkPostmarkAuth(authorization: string | undefined, expected: { user: string; password: string }): void {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization ?? "");
  if (!match) throw notAuthenticated("postmark", "no HTTP basic auth (put user:password in the webhook URL)");
  const given = Buffer.from(match[1], "base64");
  const wanted = Buffer.from(`${expected.user}:${expected.password}`, "utf8");
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) throw notAuthenticated("postmark", "wrong HTTP basic auth credentials");
}

/**
 * One Postmark webhook (Bounce, SpamComplaint, Delivery; Open, Click and SubscriptionChange
 * are ignored). Postmark replaces the Message-ID, so only the metadata delivery set
 * (X-PM-Metadata-mailroom_delivery_id → Metadata) names the delivery.
 */
export function postmarkReports(body: Uint8Array): ProviderReport[] {
  const n = parseJson("postmark", body);
  if (!isObject(n)) throw malformed("postmark", "not a JSON object");
  const metadata = isObject(n.Metadata) ? n.Metadata : {};
  const base = { provider: "postmark", deliveryId: text(metadata[DELIVERY_ID_KEY]), messageId: "", occurredAt: dateOf(n.BouncedAt ?? n.DeliveredAt) };
  // Older bounce webhooks carry no RecordType; a Type with a TypeCode is a bounce.
  const recordType = text(n.RecordType) || (n.TypeCode !== undefined ? "Bounce" : "");
  switch (recordType) {
    case "Bounce": {
      const type = text(n.Type);
      if (!HARD.has(type) && !SOFT.has(type)) return [{ ...base, recipient: text(n.Email), kind: "ignored", reason: `Postmark ${type} bounce record` }];
      const diagnostic = text(n.Details) || text(n.Description) || type;
      const quoted = replyCodesIn(diagnostic);
      return [{ ...base, kind: "bounce", recipient: text(n.Email), permanent: HARD.has(type), status: quoted.status, smtpCode: quoted.smtpCode, diagnostic }];
    }
    case "SpamComplaint":
      return [{ ...base, kind: "complaint", recipient: text(n.Email), feedbackType: "abuse", userAgent: "Postmark" }];
    case "Delivery":
      return [{ ...base, kind: "delivered", recipient: text(n.Recipient), smtpCode: replyCodesIn(text(n.Details)).smtpCode, detail: text(n.Details) }];
    default:
      if (!recordType) throw malformed("postmark", "no RecordType");
      return [{ ...base, recipient: "", kind: "ignored", reason: `Postmark ${recordType} webhook` }];
  }
}
