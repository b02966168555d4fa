import { randomBytes } from "node:crypto";
import { encodeWord, encodeWords, foldLines, quoteString } from "nodemailer/lib/mime-funcs";
import { wireBody } from "@mailroom/content/merge.js";
import { asciiDomain } from "../domain/message.js";
import type { Body, EncodedPart, OutgoingMail } from "../domain/ports.js";

/**
 * A forwarded message's bytes as they came; headers a route adds (a relay provider's correlation
 * headers, routed-transport.ts) go in front, in the message's own line ending, where the
 * original DKIM signature (which names the headers it covers) does not see them.
 */
function forwardedBytes(raw: Uint8Array, headers: ReadonlyArray<{ key: string; value: string }>): Buffer {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (!headers.length) return bytes;
  const firstLf = bytes.indexOf(10);
  const eol = firstLf > 0 && bytes[firstLf - 1] === 13 ? "\r\n" : firstLf < 0 ? "\r\n" : "\n";
  return Buffer.concat([Buffer.from(headers.map((h) => `${header(h.key, h.value)}${eol}`).join(""), "utf8"), bytes]);
}

/**
 * The RFC 5322 message for one recipient, built directly instead of through nodemailer's
 * MailComposer (a tree of streams per message): headers are a few string operations,
 * bodies go out as 7bit when they are plain ASCII with short lines and as base64 (native)
 * otherwise. nodemailer still speaks SMTP and signs (DKIM) the result.
 */
export function buildMime(mail: OutgoingMail, date = new Date()): Buffer {
  if (mail.raw) return forwardedBytes(mail.raw, mail.headers);
  const lines: string[] = [
    header("From", formatAddress(mail.from.name, mail.from.address)),
    header("To", formatAddress("", mail.to)),
  ];
  if (mail.cc?.length) lines.push(ccHeader(mail.cc));
  const replyTo = mail.replyTo ? replyToHeader(mail.replyTo) : undefined;
  if (replyTo) lines.push(replyTo);
  lines.push(subjectHeader(mail.subject), `Message-ID: ${mail.messageId}`, `Date: ${mimeDate(date)}`, "MIME-Version: 1.0");
  for (const h of mail.headers) lines.push(header(h.key, h.value));

  const html = bodyPart(mail.html);
  const text = bodyLength(mail.text) > 0 ? bodyPart(mail.text) : undefined;
  const attachments = mail.attachments ?? [];
  if (attachments.length > 0) {
    // multipart/mixed { multipart/related { the bodies, inline parts }, attachments }, each level only when needed.
    let entity = bodiesEntity(html, text);
    const inline = attachments.filter((a) => a.inline);
    const attached = attachments.filter((a) => !a.inline);
    if (inline.length) entity = multipartEntity("related", entity, inline);
    if (attached.length) entity = multipartEntity("mixed", entity, attached);
    lines.push(...entity.head);
    return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`), ...entity.chunks]);
  }
  if (!text) {
    lines.push(...singlePartHeaders(html.cte));
    return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`), html.body]);
  }
  const boundary = newBoundary();
  lines.push(multipartHeader(boundary));
  const head = `${lines.join("\r\n")}\r\n\r\n`;
  return Buffer.concat([
    Buffer.from(`${head}${textPartHead(boundary, text.cte)}`),
    text.body,
    Buffer.from(htmlPartHead(boundary, html.cte)),
    html.body,
    Buffer.from(closingDelimiter(boundary)),
  ]);
}

/** A MIME entity: its Content-* header lines and its body as chunks (shared buffers, concatenated once). */
interface Entity {
  head: string[];
  chunks: Buffer[];
}

/** The HTML alone, or text and HTML as multipart/alternative: the same bytes as the layout without attachments. */
function bodiesEntity(html: ReturnType<typeof bodyPart>, text: ReturnType<typeof bodyPart> | undefined): Entity {
  if (!text) return { head: singlePartHeaders(html.cte), chunks: [html.body] };
  const boundary = newBoundary();
  return {
    head: [multipartHeader(boundary)],
    chunks: [Buffer.from(textPartHead(boundary, text.cte)), text.body, Buffer.from(htmlPartHead(boundary, html.cte)), html.body, Buffer.from(closingDelimiter(boundary))],
  };
}

/**
 * `first` followed by already encoded parts (attachments: their headers and base64 body,
 * built once per content) under a new boundary. multipart/related names its root's type
 * (RFC 2387).
 */
function multipartEntity(subtype: "mixed" | "related", first: Entity, parts: readonly EncodedPart[]): Entity {
  const boundary = newBoundary();
  const rootType = subtype === "related" ? `; type="${/^Content-Type: ([^;\r]+)/.exec(first.head[0])?.[1] ?? "text/html"}"` : "";
  const chunks: Buffer[] = [Buffer.from(`--${boundary}\r\n${first.head.join("\r\n")}\r\n\r\n`), ...first.chunks];
  const delimiter = Buffer.from(`\r\n--${boundary}\r\n`);
  for (const part of parts) chunks.push(delimiter, part.bytes);
  chunks.push(Buffer.from(closingDelimiter(boundary)));
  return { head: [`Content-Type: multipart/${subtype}${rootType};\r\n boundary="${boundary}"`], chunks };
}

/**
 * The Cc header: the addresses as the sender wrote them, names encoded as needed, domains in
 * punycode; no control character reaches the line (the email service refuses them already).
 */
export const ccHeader = (cc: readonly string[]) =>
  header("Cc", cc.map((value) => {
    // eslint-disable-next-line no-control-regex
    const r = parseAddress(value.replace(/[\u0000-\u001f\u007f]+/g, " "));
    return formatAddress(r.name, asciiDomain(r.address));
  }).join(", "));

// The pieces of the layout above, shared with the skeletons (mime-skeleton.ts) so both
// paths write the same message.

/** One Reply-To header for one address or a list of them; undefined for none. */
export const replyToHeader = (replyTo: string | readonly string[]) => {
  const list = [replyTo].flat();
  if (!list.length) return undefined;
  return header("Reply-To", list.map((value) => {
    const r = parseAddress(value);
    return formatAddress(r.name, r.address);
  }).join(", "));
};
export const subjectHeader = (subject: string) => header("Subject", encodeWords(subject, "Q", 52));
export const singlePartHeaders = (cte: string) => ["Content-Type: text/html; charset=utf-8", `Content-Transfer-Encoding: ${cte}`];
export const multipartHeader = (boundary: string) => `Content-Type: multipart/alternative;\r\n boundary="${boundary}"`;
/** After the message head: the first delimiter and the text part's head. */
export const textPartHead = (boundary: string, cte: string) =>
  `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: ${cte}\r\n\r\n`;
export const htmlPartHead = (boundary: string, cte: string) =>
  `\r\n--${boundary}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: ${cte}\r\n\r\n`;
export const closingDelimiter = (boundary: string) => `\r\n--${boundary}--\r\n`;

/** Unique per message (or skeleton) without a random draw each time; "=_" never occurs in base64 or QP. */
export function newBoundary(): string {
  return `=_mr_${BOUNDARY_PREFIX}${(boundaryCounter += 1).toString(36)}`;
}

const BOUNDARY_PREFIX = `${randomBytes(9).toString("hex")}_`;
let boundaryCounter = 0;

/** RFC 5322 date, e.g. "Wed, 02 Jan 2030 03:04:05 +0000"; the last one is kept (one per second). */
export function mimeDate(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== lastDate.second) lastDate = { second, text: date.toUTCString().replace(/GMT/, "+0000") };
  return lastDate.text;
}
let lastDate = { second: Number.NaN, text: "" };

/** `Key: value`, folded at 76 columns on whitespace (continuation lines start with a space). */
export function header(key: string, value: string): string {
  const line = `${key}: ${value}`;
  return line.length <= 76 ? line : foldLines(line, 76);
}

const ATEXT_PHRASE = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]+$/;

/** `Name <address>`: plain, quoted or RFC 2047-encoded name as needed. */
export function formatAddress(name: string, address: string): string {
  const n = name.replace(/[\r\n]+/g, " ").trim();
  if (!n) return address;
  let phrase: string;
  if (/^[\x20-\x7e]*$/.test(n)) phrase = ATEXT_PHRASE.test(n) ? n : quoteString(n);
  else phrase = encodeWord(n, "Q", 52);
  return `${phrase} <${address}>`;
}

/** "Name <a@b>" or "a@b". */
export function parseAddress(value: string): { name: string; address: string } {
  const m = /^\s*(.*?)\s*<([^<>]+)>\s*$/.exec(value);
  if (!m) return { name: "", address: value.trim() };
  return { name: m[1].replace(/^"(.*)"$/, "$1").replace(/\\(.)/g, "$1"), address: m[2].trim() };
}

/**
 * 7bit when every byte is ASCII and no line exceeds 998 octets, line breaks made CRLF;
 * otherwise base64 (of the same CRLF text) in 76-character lines. A body merged to bytes
 * by the renderer carries that decision and is used as is.
 */
export function bodyPart(content: Body): { cte: "7bit" | "base64"; body: Buffer } {
  const wire = typeof content === "string" ? wireBody(content) : content;
  return wire.sevenBit ? { cte: "7bit", body: wire.bytes } : { cte: "base64", body: base64Lines(wire.bytes) };
}

export function bodyLength(body: Body): number {
  return typeof body === "string" ? body.length : body.bytes.length;
}

/** A body as text again (local capture keeps the parts readable). */
export function bodyText(body: Body): string {
  return typeof body === "string" ? body : body.bytes.toString("utf8");
}

/** Input bytes per native base64 call: 32 lines of 57 bytes (76 characters). */
const BASE64_CHUNK = 57 * 32;

/**
 * Base64 in 76-character CRLF lines, written straight into the output: each chunk is
 * encoded natively into place and its lines are moved apart from the last one back.
 * (A whole-body base64 string and a write per line cost about four times as much.)
 */
export function base64Lines(src: Buffer): Buffer {
  const len = src.length;
  const lines = Math.ceil(len / 57);
  const out = Buffer.allocUnsafe(Math.ceil(len / 3) * 4 + Math.max(0, lines - 1) * 2);
  let o = 0;
  for (let a = 0; a < len; a += BASE64_CHUNK) {
    if (a > 0) {
      out[o++] = 13;
      out[o++] = 10;
    }
    const written = out.write(src.toString("base64", a, Math.min(a + BASE64_CHUNK, len)), o, "latin1");
    const n = Math.ceil(written / 76);
    for (let k = n - 1; k > 0; k--) {
      const start = o + k * 76;
      const dst = start + k * 2;
      out.copyWithin(dst, start, Math.min(start + 76, o + written));
      out[dst - 2] = 13;
      out[dst - 1] = 10;
    }
    o += written + (n - 1) * 2;
  }
  return out.subarray(0, o);
}
