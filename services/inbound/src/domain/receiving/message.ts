import EmailReplyParser from "email-reply-parser";
import { convert } from "html-to-text";
import PostalMime, { type Address } from "postal-mime";
import type { ReceivedAddress, ReceivedDetails } from "./model.js";

/** One attachment of a received message, with its decoded bytes (written to the object store). */
export interface ParsedAttachment {
  filename: string;
  contentType: string;
  contentId: string;
  disposition: "attachment" | "inline";
  content: Uint8Array;
}

/** A received message read with postal-mime into what a ReceivedEmail records. */
export interface ParsedMessage {
  from: ReceivedAddress;
  to: ReceivedAddress[];
  cc: ReceivedAddress[];
  subject: string;
  /** Without angle brackets; "" when the message has none. */
  messageId: string;
  inReplyTo: string;
  /** Oldest first, as the header lists them. */
  references: string[];
  details: ReceivedDetails;
  attachments: ParsedAttachment[];
  /** postal-mime's whole result, for the DMARC port. */
  parsed: unknown;
}

/** The stripped reply is looked for in this much text at most: the parser's regexes are not linear in the worst case. */
const REPLY_TEXT_LIMIT = 100_000;

export async function parseReceived(raw: Uint8Array): Promise<ParsedMessage> {
  const email = await PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" });
  const text = email.text ?? "";
  const html = email.html ?? "";
  return {
    from: mailboxes(email.from ? [email.from] : [])[0] ?? { address: "", name: "" },
    to: mailboxes(email.to),
    cc: mailboxes(email.cc),
    subject: email.subject ?? "",
    messageId: bare(email.messageId ?? ""),
    inReplyTo: messageIds(email.inReplyTo ?? "")[0] ?? "",
    references: messageIds(email.references ?? ""),
    details: {
      text,
      html,
      strippedTextReply: strippedReply(text || (html ? convert(html.slice(0, REPLY_TEXT_LIMIT * 4), { wordwrap: false }) : "")),
      headers: email.headers.map((h) => ({ name: h.originalKey || h.key, value: h.value })),
    },
    attachments: email.attachments.map((a) => ({
      filename: a.filename ?? "",
      contentType: a.mimeType || "application/octet-stream",
      contentId: bare(a.contentId ?? ""),
      disposition: a.disposition === "inline" || (a.related && a.disposition !== "attachment") ? "inline" : "attachment",
      content: typeof a.content === "string" ? new TextEncoder().encode(a.content) : new Uint8Array(a.content),
    })),
    parsed: email,
  };
}

/** The reply without its quoted history and signature (email-reply-parser). */
export function strippedReply(text: string): string {
  if (!text.trim()) return "";
  try {
    return new EmailReplyParser().parseReply(text.slice(0, REPLY_TEXT_LIMIT)).trim();
  } catch {
    return "";
  }
}

/** Mailboxes of an address list, groups unwrapped; addresses lower-cased in their domain only. */
function mailboxes(list: Address[] | undefined): ReceivedAddress[] {
  const out: ReceivedAddress[] = [];
  for (const a of list ?? []) {
    if (a.group) for (const m of a.group) out.push({ address: m.address ?? "", name: m.name ?? "" });
    else out.push({ address: a.address ?? "", name: a.name ?? "" });
  }
  return out.filter((m) => m.address);
}

const bare = (id: string) => id.trim().replace(/^<(.*)>$/, "$1").trim();

/** `<a@x> <b@y>` (or ids without brackets, separated by spaces or commas) → ["a@x", "b@y"]. */
export function messageIds(header: string): string[] {
  const bracketed = header.match(/<[^<>\s]+>/g);
  if (bracketed) return bracketed.map(bare);
  return header.split(/[\s,]+/).map(bare).filter((id) => id.includes("@"));
}
