import { z } from "zod";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { ReceivedAttachment, ReceivedEmail } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { apiErrorSchema, refusal } from "./errors.js";

/**
 * Received emails (DESIGN §10.4) as the API shows them, shared by the received-emails-*.ts
 * routes: the list item (what EMAIL_RECEIVED announces, in the same shapes, plus where it
 * went) and the detail (with the bodies and headers).
 */

export const RECEIVED_EMAIL_ID = /^rcv_[A-Za-z0-9_-]{1,80}$/;
export const RECEIVED_ATTACHMENT_ID = /^att_[A-Za-z0-9_-]{1,80}$/;

const at = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : new Date(0).toISOString());

export const receivedAttachmentSchema = z
  .strictObject({
    id: z.string().meta({ description: "`att_…`: download it with `GET /v1/received-emails/{id}/attachments/{attachmentId}`." }),
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int().min(0).meta({ description: "Bytes, decoded." }),
    contentId: z.string().optional().meta({ description: "The Content-ID (without angle brackets) of an inline part, which the HTML names as `cid:…`." }),
    inline: z.boolean().meta({ description: "An inline part (an image the HTML shows) rather than an attached file." }),
  })
  .meta({ id: "ReceivedAttachment" });

const receivedFields = {
  id: z.string().meta({ description: "`rcv_…`", examples: ["rcv_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
  domainId: z.string().meta({ description: "The inbound domain (`ind_…`) that took it." }),
  from: z.string().meta({ description: "The From header's address (as `EMAIL_RECEIVED` gives it).", examples: ["ann@example.com"] }),
  fromName: z.string().optional().meta({ description: "The From header's display name, when it had one." }),
  to: z.array(z.string()).meta({ description: "The To header's addresses." }),
  cc: z.array(z.string()).meta({ description: "The Cc header's addresses." }),
  envelopeTo: z.array(z.string()).meta({ description: "The SMTP recipients (RCPT TO) of this workspace that took it; a Bcc shows only here." }),
  mailFrom: z.string().meta({ description: "The SMTP envelope sender (MAIL FROM); empty for a bounce." }),
  subject: z.string(),
  messageId: z.string().meta({ description: "The Message-ID header, without angle brackets." }),
  inReplyToHeader: z.string().optional().meta({ description: "The In-Reply-To header, without angle brackets." }),
  references: z.array(z.string()).meta({ description: "The References header's message ids." }),
  inReplyTo: z
    .strictObject({
      emailId: z.string().optional().meta({ description: "The transactional email (`trs_…`) it answers." }),
      broadcastId: z.string().optional().meta({ description: "The broadcast it answers." }),
      contactId: z.string().optional().meta({ description: "The contact the answered message went to." }),
    })
    .optional()
    .meta({ description: "What Mailroom sent that this message answers (by In-Reply-To and References); absent when it answers nothing Mailroom sent." }),
  mailboxHash: z.string().optional().meta({ description: "The tag of a plus-address (`reply+abc@…` → `abc`)." }),
  receivedAt: z.iso.datetime(),
  size: z.number().int().min(0).meta({ description: "The raw message's size in bytes." }),
  attachments: z.array(receivedAttachmentSchema).meta({ description: "Metadata only; each file is downloaded by its id." }),
  spamScore: z.number().optional().meta({ description: "SpamAssassin's score, when SpamAssassin was available when it arrived." }),
  ruleId: z.string().optional().meta({ description: "The rule (`inr_…`) that took it." }),
  action: z.string().optional().meta({ description: "That rule's action: `webhook`, `forward` or `store`." }),
  forwardedEmailId: z.string().optional().meta({ description: "For `forward`: the forwarded copy's email id (`trs_…`), whose delivery shows in `GET /v1/emails/{id}`." }),
};

export const receivedEmailSummarySchema = z.strictObject(receivedFields).meta({ id: "ReceivedEmailSummary" });

export const receivedEmailSchema = z
  .strictObject({
    ...receivedFields,
    text: z.string().meta({ description: "The plain-text body (empty when the message had none)." }),
    html: z.string().meta({ description: "The HTML body as received (empty when the message had none). Untrusted: render it sandboxed, without scripts or remote content." }),
    strippedTextReply: z.string().meta({ description: "The text with quoted history and signature removed: what the sender wrote." }),
    headers: z.array(z.strictObject({ name: z.string(), value: z.string() })).meta({ description: "Every header, in order, names as written." }),
  })
  .meta({ id: "ReceivedEmail" });

export function receivedAttachmentJson(a: ReceivedAttachment) {
  return {
    id: a.id,
    filename: a.filename,
    contentType: a.contentType,
    size: Number(a.size),
    ...(a.contentId ? { contentId: a.contentId } : {}),
    inline: a.disposition === "inline",
  };
}

/** A list item: everything but the bodies and headers. */
export function receivedEmailSummaryJson(e: ReceivedEmail) {
  const reply = e.inReplyTo;
  const inReplyTo = reply && (reply.emailId || reply.broadcastId || reply.contactId)
    ? { ...(reply.emailId ? { emailId: reply.emailId } : {}), ...(reply.broadcastId ? { broadcastId: reply.broadcastId } : {}), ...(reply.contactId ? { contactId: reply.contactId } : {}) }
    : undefined;
  return {
    id: e.id,
    domainId: e.domainId,
    from: e.from?.address ?? "",
    ...(e.from?.name ? { fromName: e.from.name } : {}),
    to: e.to.map((a) => a.address),
    cc: e.cc.map((a) => a.address),
    envelopeTo: e.envelopeTo,
    mailFrom: e.mailFrom,
    subject: e.subject,
    messageId: e.messageId,
    ...(e.inReplyToHeader ? { inReplyToHeader: e.inReplyToHeader } : {}),
    references: e.references,
    ...(inReplyTo ? { inReplyTo } : {}),
    ...(e.mailboxHash ? { mailboxHash: e.mailboxHash } : {}),
    receivedAt: at(e.receivedAt),
    size: Number(e.size),
    attachments: e.attachments.map(receivedAttachmentJson),
    ...(e.spamScore !== undefined ? { spamScore: e.spamScore } : {}),
    ...(e.ruleId ? { ruleId: e.ruleId } : {}),
    ...(e.action ? { action: e.action } : {}),
    ...(e.forwardedEmailId ? { forwardedEmailId: e.forwardedEmailId } : {}),
  };
}

export function receivedEmailJson(e: ReceivedEmail) {
  return {
    ...receivedEmailSummaryJson(e),
    text: e.text,
    html: e.html,
    strippedTextReply: e.strippedTextReply,
    headers: e.headers.map((h) => ({ name: h.name, value: h.value })),
  };
}

export const receivedEmailIdParams = z.strictObject({ id: z.string().max(100).meta({ description: "A received email's id (`rcv_…`); anything else is a 404." }) });

/** Refuses an id that cannot name a received email before asking the inbound unit. */
export function checkReceivedEmailId(id: string): void {
  if (!RECEIVED_EMAIL_ID.test(id)) throw refusal({ code: "received_email_not_found", message: `Received email ${id.slice(0, 64)} not found` });
}

export function checkAttachmentId(id: string): void {
  if (!RECEIVED_ATTACHMENT_ID.test(id)) throw refusal({ code: "received_attachment_not_found", message: `Attachment ${id.slice(0, 64)} not found` });
}

export const receivedEmailNotFound = { description: "`received_email_not_found` (also another workspace's, or one past its retention).", body: apiErrorSchema };
