import mime from "mime";
import { badRequest } from "@mailroom/kit/errors.js";
import {
  MAX_ATTACHMENT_BYTES, MAX_RECIPIENTS, MAX_TAGS,
  type AttachmentContent, type EmailHeader, type EmailRequest, type EmailTag,
} from "./model.js";
import { mailboxAddress } from "./validate.js";

/*
 * What an email can carry besides its content (DESIGN §9.5): cc, bcc, custom headers,
 * attachments and tags. The gateway shape-checks the public JSON; these checks are the
 * service's own, because the SMTP submission unit calls the service directly.
 */

// Any control character or Unicode line separator: a line break would inject headers.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
/** RFC 5322 field name: printable US-ASCII except the colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]{1,76}$/;
const MAX_HEADER_VALUE = 998;
const MAX_HEADERS = 50;
const TAG_PART = /^[A-Za-z0-9_-]{1,256}$/;
const CONTENT_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
const CONTENT_ID = /^[^\s<>"()\\,;:\[\]]{1,250}$/;
const MAX_FILENAME = 255;

/** Names the system sets or that change routing (lowercase); any Content-* too. */
const RESERVED_HEADERS = new Set([
  "from", "to", "cc", "bcc", "subject", "date", "message-id", "return-path", "sender", "dkim-signature",
  "list-unsubscribe", "list-unsubscribe-post", "mime-version", "received",
]);

/** Postmark's forbidden attachment extensions. */
export const FORBIDDEN_EXTENSIONS = new Set([
  "vbs", "exe", "bin", "bat", "chm", "com", "cpl", "crt", "hlp", "hta", "inf", "ins", "isp", "jse", "lnk", "mdb", "pcd",
  "pif", "reg", "scr", "sct", "shs", "vbe", "vba", "wsf", "wsh", "wsl", "msc", "msi", "msp", "mst",
]);

/** The content types of those extensions (application/octet-stream, the generic type, stays allowed). */
export const FORBIDDEN_TYPES = new Set([
  "application/x-msdownload", "application/x-msdos-program", "application/x-dosexec", "application/x-executable",
  "application/x-ms-installer", "application/x-msi", "application/x-ms-shortcut", "application/x-bat",
  "application/bat", "application/x-msdos-windows", "application/hta", "application/vnd.ms-htmlhelp",
  "application/x-chm", "application/winhlp", "application/x-winhelp", "application/x-msaccess", "application/vbscript",
  "text/vbscript", "application/x-vbscript", "application/x-ms-wsh", "application/x-ms-wsf", "text/x-ms-regedit",
  "application/x-ms-regedit", "application/x-x509-ca-cert", "application/x-cpl", "application/x-internet-signup",
  "application/x-mscardfile", "application/x-shockwave-flash-executable", "application/x-ms-msc",
  "application/x-ms-msp", "application/x-ms-mst", "application/x-setupscript",
]);

const extensionOf = (filename: string) => {
  const dot = filename.lastIndexOf(".");
  return dot >= 0 ? filename.slice(dot + 1).trim().toLowerCase() : "";
};

/** The content type of an attachment given without one, by its extension (the `mime` package's table). */
export const contentTypeOf = (filename: string) => mime.getType(filename) ?? "application/octet-stream";

const shown = (value: string) => JSON.stringify(value.slice(0, 100));

export interface ValidatedExtras {
  /** Bare cc / bcc addresses, in the order given, duplicates of `to` or of each other left out. */
  cc: string[];
  bcc: string[];
  headers: EmailHeader[];
  /** With content types resolved. */
  attachments: AttachmentContent[];
  tags: EmailTag[];
}

/** Checks cc, bcc, headers, attachments and tags of one email whose bare `to` is `recipient`. */
export function validateExtras(req: EmailRequest, recipient: string): ValidatedExtras {
  const cc = req.cc ?? [];
  const bcc = req.bcc ?? [];
  const total = 1 + cc.length + bcc.length;
  if (total > MAX_RECIPIENTS) {
    throw badRequest("too_many_recipients", `An email has at most ${MAX_RECIPIENTS} recipients in to, cc and bcc together; got ${total}`);
  }
  const seen = new Set([recipient.toLowerCase()]);
  const envelope = (field: "cc" | "bcc", values: string[]) => {
    const out: string[] = [];
    values.forEach((value, i) => {
      if (typeof value !== "string" || CONTROL.test(value)) {
        throw badRequest("header_injection", `${field}[${i}] must not contain line breaks or control characters`);
      }
      const address = mailboxAddress(value.trim());
      if (!address) throw badRequest("invalid_request", `${field}[${i}] is not a valid email address: ${shown(value)}`);
      if (seen.has(address.toLowerCase())) return;
      seen.add(address.toLowerCase());
      out.push(address);
    });
    return out;
  };
  return {
    cc: envelope("cc", cc),
    bcc: envelope("bcc", bcc),
    headers: validateHeaders(req.headers ?? []),
    attachments: validateAttachments(req.attachments ?? []),
    tags: validateTags(req.tags ?? []),
  };
}

function validateHeaders(headers: EmailHeader[]): EmailHeader[] {
  if (headers.length > MAX_HEADERS) throw badRequest("invalid_request", `headers holds at most ${MAX_HEADERS} headers; got ${headers.length}`);
  return headers.map(({ name, value }, i) => {
    if (!FIELD_NAME.test(name ?? "")) {
      throw badRequest("invalid_request", `headers[${i}]: ${shown(name ?? "")} is not a header name (printable ASCII without ":" or spaces, at most 76 characters)`);
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith("content-")) {
      throw badRequest("header_not_allowed", `The header ${name} is set by Mailroom or changes routing, so it cannot be given in headers`, {
        extra: { header: JSON.stringify(name) },
      });
    }
    if (typeof value !== "string" || CONTROL.test(value.replace(/\t/g, " "))) {
      throw badRequest("header_injection", `headers[${i}] (${name}) must not contain line breaks or control characters`);
    }
    if (value.length > MAX_HEADER_VALUE) throw badRequest("invalid_request", `headers[${i}] (${name}) is longer than ${MAX_HEADER_VALUE} characters`);
    return { name, value };
  });
}

function validateAttachments(attachments: EmailRequest["attachments"] & object): AttachmentContent[] {
  let total = 0;
  const contentIds = new Set<string>();
  const out = attachments.map((a, i) => {
    const filename = (a.filename ?? "").trim();
    if (!filename) throw badRequest("invalid_request", `attachments[${i}].filename is required`);
    if (CONTROL.test(filename)) throw badRequest("header_injection", `attachments[${i}].filename must not contain line breaks or control characters`);
    if (filename.length > MAX_FILENAME) throw badRequest("invalid_request", `attachments[${i}].filename is longer than ${MAX_FILENAME} characters`);
    const given = (a.contentType ?? "").trim().toLowerCase();
    if (given && !CONTENT_TYPE.test(given)) {
      throw badRequest("invalid_request", `attachments[${i}].contentType ${shown(a.contentType!)} is not a content type (type/subtype)`);
    }
    const contentType = given || contentTypeOf(filename);
    if (FORBIDDEN_EXTENSIONS.has(extensionOf(filename)) || FORBIDDEN_TYPES.has(contentType)) {
      throw badRequest("attachment_type_not_allowed", `attachments[${i}] (${filename}): executable files (.${extensionOf(filename) || contentType}) cannot be attached`, {
        extra: { filename: JSON.stringify(filename) },
      });
    }
    const attachment: AttachmentContent = { filename, contentType, size: a.content?.byteLength ?? 0, content: a.content ?? new Uint8Array(0) };
    if (a.contentId) {
      const contentId = a.contentId.trim().replace(/^<(.*)>$/, "$1");
      if (!CONTENT_ID.test(contentId)) {
        throw badRequest("invalid_request", `attachments[${i}].contentId ${shown(a.contentId)} must be 1 to 250 characters without spaces, quotes, brackets or separators`);
      }
      if (contentIds.has(contentId)) throw badRequest("invalid_request", `attachments[${i}].contentId ${shown(contentId)} is used by another attachment`);
      contentIds.add(contentId);
      attachment.contentId = contentId;
    }
    total += attachment.size;
    return attachment;
  });
  if (total > MAX_ATTACHMENT_BYTES) {
    throw badRequest("attachments_too_large", `Attachments of one email are at most 10 MB decoded (${MAX_ATTACHMENT_BYTES} bytes); these are ${total} bytes`);
  }
  return out;
}

function validateTags(tags: EmailTag[]): EmailTag[] {
  if (tags.length > MAX_TAGS) throw badRequest("invalid_tags", `An email carries at most ${MAX_TAGS} tags; got ${tags.length}`);
  return tags.map(({ name, value }, i) => {
    for (const [part, text] of [["name", name], ["value", value]] as const) {
      if (typeof text !== "string" || !TAG_PART.test(text)) {
        throw badRequest("invalid_tags", `tags[${i}].${part} ${shown(String(text ?? ""))} must be 1 to 256 letters, digits, "_" or "-"`);
      }
    }
    return { name, value };
  });
}

/** `name:value`, the form of the list and stats filters. */
export const tagKey = (tag: EmailTag) => `${tag.name}:${tag.value}`;
