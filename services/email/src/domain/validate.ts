import emailAddresses from "email-addresses";
import { appError, badRequest } from "@mailroom/kit/errors.js";
import { MAX_HTML_BYTES, MAX_REPLY_TO, SCHEDULE_HORIZON_MS, type EmailRequest } from "./model.js";

// Any control character (C0, DEL, C1 such as NEL U+0085) or Unicode line/paragraph
// separator: CR/LF would let a caller inject headers, and the others are line breaks too.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const MAX_KEY_LENGTH = 256;
const MAX_GROUP_BY_LENGTH = 256;
const MAX_SUBJECT_LENGTH = 998;
const MAX_NAME_LENGTH = 256;
/** A forwarded message: above the inbound unit's largest (MAILROOM_INBOUND_MAX_BYTES, 35 MB by default). */
const MAX_FORWARDED_BYTES = 64 * 1024 * 1024;

// A bare dot-atom address (`ann.lee+x@mail.example.test`): the RFC 5322 parser would return
// it unchanged, so the common case skips the parser (several % of the service's CPU).
const PLAIN_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$/;

/** The bare address of a single mailbox (`a@b` or `Name <a@b>`), or undefined. */
export function mailboxAddress(value: string): string | undefined {
  if (!value || value.length > 320 * 2) return undefined;
  if (PLAIN_ADDRESS.test(value)) return value;
  return parsedMailboxAddress(value);
}

/** `mailboxAddress` through the full RFC 5322 (+ RFC 6532) parser. */
export function parsedMailboxAddress(value: string): string | undefined {
  const parsed = emailAddresses.parseOneAddress({ input: value, rfc6532: true });
  if (!parsed || parsed.type !== "mailbox") return undefined;
  const address = (parsed as emailAddresses.ParsedMailbox).address;
  return address.includes("@") ? address : undefined;
}

/** Why `to` was refused: several addresses are a list (one email has one recipient), else the address is invalid. */
export function invalidRecipientMessage(to: string): string {
  const shown = JSON.stringify(to.slice(0, 100));
  if (!to.trim()) return "to is required: one email address";
  const list = to.length <= 320 * 2 ? emailAddresses.parseAddressList({ input: to, rfc6532: true }) : null;
  if (list && list.length > 1) return `to must be one email address, not a list (got ${shown}); send one email per recipient, or use POST /v1/emails/batch`;
  return `to is not a valid email address: ${shown}`;
}

const headerField = (field: string, value: string | undefined) => {
  if (value !== undefined && CONTROL.test(value)) {
    throw badRequest("header_injection", `${field} must not contain line breaks or control characters`);
  }
};

export interface ValidatedRequest {
  /** Bare recipient address. */
  recipient: string;
  /** Bare Reply-To addresses, duplicates (case-insensitive) dropped. */
  replyTo: string[];
  /** When it is due: now for immediate sends. */
  dueAt: Date;
  scheduled: boolean;
}

/**
 * Checks everything about one email that needs no other service: header safety,
 * addresses, the scheduling window and the sizes of the small fields.
 */
export function validateRequest(req: EmailRequest, now: Date): ValidatedRequest {
  headerField("to", req.to);
  if (req.content.kind === "raw") {
    headerField("from", req.content.from);
    headerField("fromName", req.content.fromName);
    headerField("subject", req.content.subject);
    if (!req.content.from.trim()) throw badRequest("invalid_payload", "from is required");
    if (!req.content.subject.trim()) throw badRequest("invalid_payload", "subject must not be empty");
    if (req.content.subject.length > MAX_SUBJECT_LENGTH) {
      throw badRequest("invalid_request", `subject must be at most ${MAX_SUBJECT_LENGTH} characters`);
    }
    if (!req.content.html.trim()) throw badRequest("invalid_payload", "html must not be empty");
    if (req.content.html.length > MAX_HTML_BYTES / 3 && Buffer.byteLength(req.content.html, "utf8") > MAX_HTML_BYTES) {
      throw appError({ code: "payload_too_large", httpStatus: 413, message: `html is larger than 5 MB (${MAX_HTML_BYTES} bytes of UTF-8)` });
    }
    if ((req.content.fromName?.length ?? 0) > MAX_NAME_LENGTH) {
      throw badRequest("invalid_request", `fromName must be at most ${MAX_NAME_LENGTH} characters`);
    }
  } else if (req.content.kind === "forwarded") {
    // The inbound unit's own call: the bytes were taken by its SMTP listener within its size limit.
    headerField("envelopeFrom", req.content.envelopeFrom);
    if (req.content.raw.byteLength === 0) throw badRequest("invalid_payload", "a forwarded email needs its message");
    if (req.content.raw.byteLength > MAX_FORWARDED_BYTES) {
      throw appError({ code: "payload_too_large", httpStatus: 413, message: `a forwarded message is at most ${MAX_FORWARDED_BYTES} bytes` });
    }
    if (req.content.envelopeFrom && !mailboxAddress(req.content.envelopeFrom)) {
      throw badRequest("invalid_request", "envelopeFrom must be an email address, or empty for the null sender");
    }
  } else {
    headerField("template", req.content.template);
    if (!req.content.template.trim()) throw badRequest("invalid_payload", "template must not be empty");
  }
  const recipient = mailboxAddress(req.to);
  if (!recipient) throw badRequest("invalid_request", invalidRecipientMessage(req.to));

  const replyTo = replyToAddresses(req.replyTo ?? []);
  if (req.idempotencyKey !== undefined && (req.idempotencyKey.length === 0 || req.idempotencyKey.length > MAX_KEY_LENGTH)) {
    throw badRequest("invalid_request", `idempotencyKey must be 1 to ${MAX_KEY_LENGTH} characters`);
  }
  if (req.groupBy !== undefined && (req.groupBy.length > MAX_GROUP_BY_LENGTH || CONTROL.test(req.groupBy))) {
    throw badRequest("invalid_request", `groupBy must be at most ${MAX_GROUP_BY_LENGTH} printable characters`);
  }

  let dueAt = now;
  let scheduled = false;
  if (req.sendAt) {
    const at = req.sendAt.getTime();
    if (Number.isNaN(at)) throw badRequest("invalid_send_at", "sendAt must be an ISO 8601 timestamp with a time zone");
    if (at - now.getTime() > SCHEDULE_HORIZON_MS) {
      throw badRequest("send_at_out_of_range", "sendAt must be at most 90 days in the future");
    }
    // In the past or now: send now.
    if (at > now.getTime()) {
      dueAt = req.sendAt;
      scheduled = true;
    }
  }
  return { recipient, replyTo, dueAt, scheduled };
}

/** Each Reply-To value as a bare address (header-safe, one mailbox each), duplicates dropped. */
function replyToAddresses(values: string[]): string[] {
  const addresses = new Map<string, string>();
  for (const value of values) {
    headerField("replyTo", value);
    const address = mailboxAddress(value.trim());
    if (!address) throw badRequest("invalid_request", `replyTo must hold email addresses, got ${JSON.stringify(value.slice(0, 100))}`);
    if (!addresses.has(address.toLowerCase())) addresses.set(address.toLowerCase(), address);
  }
  if (addresses.size > MAX_REPLY_TO) throw badRequest("invalid_request", `replyTo holds at most ${MAX_REPLY_TO} addresses`);
  return [...addresses.values()];
}

/** Settings defaults: clicks tracked always; opens tracked for templated emails only. */
export function effectiveSettings(req: EmailRequest): { trackClicks: boolean; trackOpens: boolean } {
  return {
    trackClicks: req.settings?.trackClicks ?? true,
    trackOpens: req.settings?.trackOpens ?? req.content.kind === "templated",
  };
}
