import { createHash } from "node:crypto";
import MailComposer from "nodemailer/lib/mail-composer";
import type { CheckMessage } from "../domain/check/ports.js";

/**
 * The RFC 5322 message a spam filter scores for a pre-send check, laid out as delivery sends
 * a broadcast: From, To, Reply-To, Subject, Message-ID, Date, the text and HTML parts as
 * multipart/alternative (HTML alone without text) and, for bulk mail, List-Unsubscribe with
 * RFC 8058's one-click List-Unsubscribe-Post. Built by nodemailer's MailComposer; the multipart
 * boundary comes from the content, so the same message gives the same bytes (a test scores the
 * very message the check scored). Not DKIM-signed: a check has no key to sign with.
 */
export async function checkMime(message: CheckMessage): Promise<Buffer> {
  const headers: Record<string, string> = {};
  if (message.listUnsubscribeUrl) {
    headers["List-Unsubscribe"] = `<${message.listUnsubscribeUrl}>`;
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
  }
  const composer = new MailComposer({
    from: { name: message.from.name, address: message.from.email },
    to: message.to,
    ...(message.replyTo.length ? { replyTo: message.replyTo } : {}),
    subject: message.subject,
    html: message.html,
    ...(message.text.trim() ? { text: message.text } : {}),
    messageId: message.messageId,
    date: message.date,
    headers,
    baseBoundary: createHash("sha256").update(message.html).update(message.text).digest("hex").slice(0, 16),
  } as ConstructorParameters<typeof MailComposer>[0]);
  return composer.compile().build();
}
