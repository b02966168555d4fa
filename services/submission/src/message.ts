import { createHash } from "node:crypto";
import mime from "mime";
import type { Address, Email } from "postal-mime";
import { escapeHtml } from "@mailroom/content/escape.js";

/**
 * One submitted SMTP message as the emails the email service is asked to send: plain data
 * (the wire shapes are built in submit.ts), so the rules below are testable alone.
 */
export interface SubmittedEmail {
  to: string;
  from: string;
  fromName: string;
  subject: string;
  html: string;
  text: string;
  replyTo: string[];
  cc: string[];
  bcc: string[];
  headers: { name: string; value: string }[];
  attachments: { filename: string; content: Uint8Array; contentType: string; contentId: string }[];
  tags: { name: string; value: string }[];
  /** Derived from the workspace, the Message-ID and the recipient; "" without a Message-ID. */
  idempotencyKey: string;
}

export interface Envelope {
  mailFrom: string;
  rcptTo: string[];
}

/** The header that carries tags: `X-Mailroom-Tags: name=value, other=value`. */
export const TAGS_HEADER = "x-mailroom-tags";

/** Headers the contract refuses (DESIGN §9.5); none of the passed ones is one, but the list is kept exact. */
const REFUSED = new Set([
  "from", "to", "cc", "bcc", "subject", "date", "message-id", "return-path", "sender", "dkim-signature",
  "list-unsubscribe", "list-unsubscribe-post", "mime-version", "received",
]);
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
/**
 * Headers passed on besides X-*: threading (a helpdesk's or forum's replies must stay in their
 * thread) and the automatic-mail markers an app sets for auto-responders.
 */
const PASSED = new Set(["in-reply-to", "references", "auto-submitted", "precedence", "list-id", "importance", "priority", "keywords"]);

const mailboxes = (list: Address[] | undefined) =>
  (list ?? []).flatMap((a) => (a.group ? a.group : [a])).filter((m) => m.address);
const formatted = (m: { name: string; address: string }) => (m.name ? `${JSON.stringify(m.name)} <${m.address}>` : m.address);
const lower = (a: string) => a.trim().toLowerCase();

/**
 * The emails of one message. The envelope decides who receives it (as any SMTP server does):
 * each envelope recipient named in To gets an email of its own; those named in Cc go as `cc`
 * and the others as `bcc`, both on the first email only, so nobody receives two copies. A
 * message whose envelope names nobody of its To header sends to its first Cc recipient, or
 * to each blind recipient alone.
 */
export function emailsOf(message: Email, envelope: Envelope, workspaceId: string): SubmittedEmail[] {
  const toHeader = new Set(mailboxes(message.to).map((m) => lower(m.address)));
  const ccHeader = new Map(mailboxes(message.cc).map((m) => [lower(m.address), m]));
  const toMailboxes = new Map(mailboxes(message.to).map((m) => [lower(m.address), m]));
  const seen = new Set<string>();
  const to: string[] = [];
  const cc: string[] = [];
  const bcc: string[] = [];
  for (const rcpt of envelope.rcptTo) {
    const key = lower(rcpt);
    if (seen.has(key)) continue;
    seen.add(key);
    if (toHeader.has(key)) to.push(formatted(toMailboxes.get(key)!));
    else if (ccHeader.has(key)) cc.push(formatted(ccHeader.get(key)!));
    else bcc.push(rcpt);
  }
  const groups: { to: string; cc: string[]; bcc: string[] }[] =
    to.length > 0
      ? to.map((t, i) => (i === 0 ? { to: t, cc, bcc } : { to: t, cc: [], bcc: [] }))
      : cc.length > 0
        ? [{ to: cc[0]!, cc: cc.slice(1), bcc }]
        : bcc.map((b) => ({ to: b, cc: [], bcc: [] }));

  const from = mailboxes(message.from ? [message.from] : undefined)[0] ?? { name: "", address: envelope.mailFrom };
  const text = message.text ?? "";
  const html = message.html?.trim() ? message.html : htmlOfText(text);
  const headers: SubmittedEmail["headers"] = [];
  let tags: SubmittedEmail["tags"] = [];
  for (const h of message.headers) {
    if (h.key === TAGS_HEADER) {
      tags = [...tags, ...tagsOf(h.value)];
      continue;
    }
    if (!(h.key.startsWith("x-") || PASSED.has(h.key)) || REFUSED.has(h.key) || h.key.startsWith("content-") || !FIELD_NAME.test(h.originalKey)) continue;
    headers.push({ name: h.originalKey, value: h.value.replace(/\s*[\r\n]+\s*/g, " ").trim() });
  }
  const attachments = message.attachments.map((a, i) => {
    const contentId = (a.contentId ?? "").replace(/^<|>$/g, "");
    const inline = Boolean(contentId) && (a.related || a.disposition === "inline");
    return {
      filename: a.filename || `${contentId.replace(/@.*/, "") || `attachment-${i + 1}`}${extensionOf(a.mimeType)}`,
      content: typeof a.content === "string" ? Buffer.from(a.content, a.encoding === "base64" ? "base64" : "utf8") : new Uint8Array(a.content as ArrayBuffer),
      contentType: a.mimeType,
      contentId: inline ? contentId : "",
    };
  });
  const messageId = (message.messageId ?? "").trim();
  return groups.map((g) => ({
    to: g.to,
    from: from.address,
    fromName: from.name,
    // The email service refuses an empty subject; a printer's alert often has none.
    subject: message.subject?.trim() ? message.subject : "(no subject)",
    html,
    text,
    replyTo: mailboxes(message.replyTo).map(formatted),
    cc: g.cc,
    bcc: g.bcc,
    headers,
    attachments,
    tags,
    idempotencyKey: messageId ? idempotencyKeyOf(workspaceId, messageId, g.to) : "",
  }));
}

/**
 * A resubmitted Message-ID is the same email (DESIGN §9.5): the email service's idempotency
 * key, one per recipient (a message sends one email per To recipient).
 */
export function idempotencyKeyOf(workspaceId: string, messageId: string, to: string): string {
  const recipient = lower(/<([^>]*)>\s*$/.exec(to)?.[1] ?? to);
  return `smtp-${createHash("sha256").update(`${workspaceId}\0${messageId}\0${recipient}`).digest("hex")}`;
}

/** `name=value, other=value` as tags; the email service checks names and values (invalid_tags). */
export function tagsOf(value: string): { name: string; value: string }[] {
  return value
    .split(/[,;]/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const eq = part.indexOf("=");
      return eq < 0 ? { name: part, value: "" } : { name: part.slice(0, eq).trim(), value: part.slice(eq + 1).trim() };
    });
}

/** A text-only message still needs HTML (the API requires it): the text, escaped, line breaks kept. */
export function htmlOfText(text: string): string {
  if (!text.trim()) return "<p></p>";
  const escaped = escapeHtml(text.trim()).replace(/\r\n?/g, "\n");
  return escaped
    .split(/\n{2,}/)
    .map((p) => `<p>${p.replace(/\n/g, "<br>\n")}</p>`)
    .join("\n");
}

/** A name's extension for an unnamed part, by its type (the `mime` package's table). */
const extensionOf = (mimeType: string) => {
  const ext = mime.getExtension(mimeType);
  // Not an executable extension the email service would refuse (e.g. application/octet-stream's ".bin").
  return ext && !["bin", "exe", "com", "bat", "msi"].includes(ext) ? `.${ext}` : ".dat";
};
