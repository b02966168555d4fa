import { createVerify, type KeyObject } from "node:crypto";
import { DELIVERY_ID_KEY } from "@mailroom/pipeline/relay-providers.js";
import type { ProviderReport } from "../../domain/model.js";
import { bareMessageId, dateOf, isObject, malformed, notAuthenticated, parseJson, replyCodesIn, text } from "./refusals.js";

const SIGNATURE_HEADER = "x-twilio-email-event-webhook-signature";
const TIMESTAMP_HEADER = "x-twilio-email-event-webhook-timestamp";

/**
 * SendGrid's signed event webhook: an ECDSA P-256 (SHA-256) signature, base64 DER, over the
 * timestamp header followed by the raw body, checked with the verification key SendGrid shows.
 */
export function checkSendgridSignature(headers: Map<string, string>, body: Uint8Array, publicKey: KeyObject): void {
  const signature = headers.get(SIGNATURE_HEADER);
  const timestamp = headers.get(TIMESTAMP_HEADER);
  if (!signature || !timestamp) throw notAuthenticated("sendgrid", "unsigned (turn on the signed event webhook)");
  let valid = false;
  try {
    valid = createVerify("sha256").update(timestamp, "utf8").update(body).verify(publicKey, signature, "base64");
  } catch {
    valid = false;
  }
  if (!valid) throw notAuthenticated("sendgrid", "the signature does not verify with MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY");
}

/**
 * A SendGrid event batch (a JSON array). The delivery id is the unique arg delivery set
 * (X-SMTPAPI unique_args → a top-level field), else `smtp-id` is the Message-ID.
 * delivered → DELIVERED; bounce (type bounce: hard, blocked: soft); dropped (a bounced or
 * invalid address: hard, anything else SendGrid refused to send: soft); spamreport →
 * complaint; deferred (SendGrid retries) → a deferral; engagement events are ignored.
 */
export function sendgridReports(body: Uint8Array): ProviderReport[] {
  const events = parseJson("sendgrid", body);
  if (!Array.isArray(events)) throw malformed("sendgrid", "not a JSON array of events");
  return events.map((e): ProviderReport => {
    if (!isObject(e)) throw malformed("sendgrid", "an event is not a JSON object");
    const base = { provider: "sendgrid", deliveryId: text(e[DELIVERY_ID_KEY]), messageId: bareMessageId(e["smtp-id"]), recipient: text(e.email), occurredAt: dateOf(e.timestamp) };
    const event = text(e.event);
    switch (event) {
      case "delivered":
        return { ...base, kind: "delivered", smtpCode: replyCodesIn(text(e.response)).smtpCode, detail: text(e.response) };
      case "bounce": {
        const diagnostic = text(e.reason) || "bounced";
        const quoted = replyCodesIn(diagnostic);
        return { ...base, kind: "bounce", permanent: text(e.type) !== "blocked", status: text(e.status) || quoted.status, smtpCode: quoted.smtpCode, diagnostic };
      }
      case "dropped": {
        const reason = text(e.reason);
        return { ...base, kind: "bounce", permanent: /bounced address|invalid/i.test(reason), status: text(e.status), smtpCode: 0, diagnostic: `dropped by SendGrid: ${reason || "no reason given"}` };
      }
      case "deferred": {
        const diagnostic = text(e.response) || "deferred";
        const quoted = replyCodesIn(diagnostic);
        return { ...base, kind: "deferred", status: text(e.status) || quoted.status, smtpCode: quoted.smtpCode, diagnostic };
      }
      case "spamreport":
        return { ...base, kind: "complaint", feedbackType: "abuse", userAgent: "SendGrid" };
      default:
        return { ...base, kind: "ignored", reason: `SendGrid ${event || "untyped"} event` };
    }
  });
}
