import { DELIVERY_ID_KEY, deliveryIdOfSesTag } from "@mailroom/pipeline/relay-providers.js";
import type { ProviderReport } from "../../domain/model.js";
import { DELIVERY_ID_HEADER } from "../../domain/classify.js";
import { bareMessageId, dateOf, isObject, replyCodesIn, text } from "./refusals.js";

type Json = Record<string, unknown>;

/**
 * One SES notification (the Message of an SNS Notification) as reports, one per recipient.
 * Both shapes: classic identity notifications (`notificationType`) and configuration-set
 * event publishing (`eventType`). The delivery id comes from the message tag delivery set
 * (X-SES-MESSAGE-TAGS → mail.tags, event publishing only) or the X-Mailroom-Delivery-Id
 * header (mail.headers, when "include original headers" is on); else the Message-ID.
 */
export function sesReports(message: string): ProviderReport[] {
  let n: unknown;
  try {
    n = JSON.parse(message);
  } catch {
    // SES's own "Successfully validated SNS topic …" and console test messages are plain text.
    return [ignoredReport("an SNS notification that is not an SES event")];
  }
  if (!isObject(n)) return [ignoredReport("an SNS notification that is not an SES event")];
  const type = text(n.notificationType) || text(n.eventType);
  const mail = isObject(n.mail) ? n.mail : {};
  const base = { provider: "ses", deliveryId: deliveryIdOf(mail), messageId: messageIdOf(mail) };
  switch (type) {
    case "Bounce": {
      const bounce = isObject(n.bounce) ? n.bounce : {};
      // Permanent: the address is bad. Transient and Undetermined: soft (retrying may work).
      // SES sends a bounce once it has stopped retrying; its retries show as DeliveryDelay.
      const permanent = text(bounce.bounceType) === "Permanent";
      const occurredAt = dateOf(bounce.timestamp);
      return recipients(bounce.bouncedRecipients).map((r) => {
        const diagnostic = text(r.diagnosticCode) || `${text(bounce.bounceType)} bounce (${text(bounce.bounceSubType)})`;
        const quoted = replyCodesIn(diagnostic);
        return { ...base, occurredAt, kind: "bounce", recipient: text(r.emailAddress), permanent, status: text(r.status) || quoted.status, smtpCode: quoted.smtpCode, diagnostic };
      });
    }
    case "Complaint": {
      const complaint = isObject(n.complaint) ? n.complaint : {};
      return recipients(complaint.complainedRecipients).map((r) => ({
        ...base, occurredAt: dateOf(complaint.timestamp), kind: "complaint", recipient: text(r.emailAddress),
        feedbackType: text(complaint.complaintFeedbackType) || "abuse", userAgent: text(complaint.userAgent) || "Amazon SES",
      }));
    }
    case "Delivery": {
      const delivery = isObject(n.delivery) ? n.delivery : {};
      const smtpResponse = text(delivery.smtpResponse);
      const list = Array.isArray(delivery.recipients) ? delivery.recipients.map(text) : [];
      return list.map((recipient) => ({ ...base, occurredAt: dateOf(delivery.timestamp), kind: "delivered", recipient, smtpCode: replyCodesIn(smtpResponse).smtpCode, detail: smtpResponse }));
    }
    case "DeliveryDelay": {
      // Event publishing: SES could not deliver yet and keeps trying until expirationTime.
      const delay = isObject(n.deliveryDelay) ? n.deliveryDelay : {};
      return recipients(delay.delayedRecipients).map((r) => {
        const diagnostic = text(r.diagnosticCode) || `delivery delayed (${text(delay.delayType) || "unknown reason"})`;
        const quoted = replyCodesIn(diagnostic);
        return { ...base, occurredAt: dateOf(delay.timestamp), kind: "deferred", recipient: text(r.emailAddress), status: text(r.status) || quoted.status, smtpCode: quoted.smtpCode, diagnostic };
      });
    }
    default:
      // Send, Reject, Open, Click, Rendering Failure, Subscription: nothing to record.
      return [ignoredReport(`SES ${type || "untyped"} notification`)];
  }
}

function recipients(list: unknown): Json[] {
  return Array.isArray(list) ? list.filter(isObject) : [];
}

function deliveryIdOf(mail: Json): string {
  const tags = isObject(mail.tags) ? mail.tags : {};
  const tagged = tags[DELIVERY_ID_KEY];
  // Written by sesTagValue: SES tag values cannot hold every character of a delivery id.
  if (Array.isArray(tagged) && typeof tagged[0] === "string") return deliveryIdOfSesTag(tagged[0]);
  return headerOf(mail, DELIVERY_ID_HEADER);
}

function messageIdOf(mail: Json): string {
  const common = isObject(mail.commonHeaders) ? mail.commonHeaders : {};
  return bareMessageId(common.messageId) || bareMessageId(headerOf(mail, "message-id"));
}

function headerOf(mail: Json, name: string): string {
  const headers = Array.isArray(mail.headers) ? mail.headers.filter(isObject) : [];
  return text(headers.find((h) => text(h.name).toLowerCase() === name.toLowerCase())?.value).trim();
}

const ignoredReport = (reason: string): ProviderReport => ({ provider: "ses", deliveryId: "", messageId: "", recipient: "", kind: "ignored", reason });
