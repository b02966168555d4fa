import { randomBytes } from "node:crypto";
import { encodeWord, encodeWords, foldLines, quoteString } from "nodemailer/lib/mime-funcs";
import type { OutgoingMail } from "./repositories.js";

/**
 * The RFC 5322 message for one recipient, built directly instead of through nodemailer's
 * MailComposer (a tree of streams per message): headers are a few string operations,
 * bodies go out as 7bit when they are plain ASCII with short lines and as base64 (native)
 * otherwise. nodemailer still speaks SMTP and signs (DKIM) the result.
 */
export function buildMime(mail: OutgoingMail, date = new Date()): Buffer {
  const lines: string[] = [
    header("From", formatAddress(mail.from.name, mail.from.address)),
    header("To", formatAddress("", mail.to)),
  ];
  if (mail.replyTo) {
    const r = parseAddress(mail.replyTo);
    lines.push(header("Reply-To", formatAddress(r.name, r.address)));
  }
  lines.push(
    header("Subject", encodeWords(mail.subject, "Q", 52)),
    `Message-ID: ${mail.messageId}`,
    `Date: ${date.toUTCString().replace(/GMT/, "+0000")}`,
    "MIME-Version: 1.0",
  );
  for (const h of mail.headers) lines.push(header(h.key, h.value));

  const html = bodyPart(mail.html);
  const text = mail.text ? bodyPart(mail.text) : undefined;
  if (!text) {
    lines.push("Content-Type: text/html; charset=utf-8", `Content-Transfer-Encoding: ${html.cte}`);
    return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`), html.body]);
  }
  const boundary = `=_mr_${BOUNDARY_PREFIX}${(boundaryCounter += 1).toString(36)}`;
  lines.push(`Content-Type: multipart/alternative;\r\n boundary="${boundary}"`);
  const head = `${lines.join("\r\n")}\r\n\r\n`;
  return Buffer.concat([
    Buffer.from(`${head}--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: ${text.cte}\r\n\r\n`),
    text.body,
    Buffer.from(`\r\n--${boundary}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: ${html.cte}\r\n\r\n`),
    html.body,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
}

/** Unique per message without a random draw each time; "=_" never occurs in base64 or QP. */
const BOUNDARY_PREFIX = `${randomBytes(9).toString("hex")}_`;
let boundaryCounter = 0;

/** `Key: value`, folded at 76 columns on whitespace (continuation lines start with a space). */
function header(key: string, value: string): string {
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
 * 7bit when every byte is ASCII and no line exceeds 998 characters (line breaks made
 * CRLF); otherwise base64 in 76-character lines.
 */
export function bodyPart(content: string): { cte: "7bit" | "base64"; body: Buffer } {
  if (/^[\x00-\x7f]*$/.test(content) && !hasLineLongerThan(content, 998)) {
    const normalized = content.includes("\r") || content.includes("\n") ? content.replace(/\r?\n|\r/g, "\r\n") : content;
    return { cte: "7bit", body: Buffer.from(normalized, "latin1") };
  }
  return { cte: "base64", body: wrapBase64(Buffer.from(content, "utf8").toString("base64")) };
}

function hasLineLongerThan(s: string, max: number): boolean {
  if (s.length <= max) return false;
  let start = 0;
  for (;;) {
    const nl = s.indexOf("\n", start);
    const end = nl < 0 ? s.length : nl;
    if (end - start > max + 1) return true; // +1: a CR before the LF
    if (nl < 0) return false;
    start = nl + 1;
  }
}

function wrapBase64(b64: string): Buffer {
  const out = Buffer.allocUnsafe(b64.length + Math.ceil(b64.length / 76) * 2);
  let o = 0;
  for (let i = 0; i < b64.length; i += 76) {
    if (i > 0) o += out.write("\r\n", o, "latin1");
    o += out.write(b64.slice(i, i + 76), o, "latin1");
  }
  return out.subarray(0, o);
}
