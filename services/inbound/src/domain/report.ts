import PostalMime from "postal-mime";

/** Header-style fields of one block (a DSN group, a feedback report, a quoted header), by lower-cased name. */
export type Fields = Map<string, string>;

/** A received message, read into the parts a report classification looks at. */
export interface ReadMessage {
  subject: string;
  /** The top-level MIME type, lower-cased ("multipart/report"). */
  contentType: string;
  /** The report-type parameter of a multipart/report, lower-cased; empty otherwise. */
  reportType: string;
  /** The human-readable text. */
  text: string;
  /** RFC 3464: the per-message fields, then one group per recipient. */
  deliveryStatus?: Fields[];
  /** RFC 5965: the machine-readable part of a feedback report. */
  feedbackReport?: Fields;
  /** The header of the message a report is about, when it quotes one. */
  originalHeaders?: Fields;
}

const DELIVERY_STATUS = new Set(["message/delivery-status", "message/global-delivery-status"]);
const FEEDBACK_REPORT = "message/feedback-report";
const QUOTED_MESSAGE = new Set(["message/rfc822", "message/global", "text/rfc822-headers", "message/global-headers"]);

/**
 * Reads a raw message with postal-mime. Report parts (delivery status, feedback report,
 * the quoted original) come out as attachments, decoded to text whatever their
 * transfer encoding was.
 */
export async function readMessage(raw: Uint8Array | string): Promise<ReadMessage> {
  const email = await PostalMime.parse(raw, { attachmentEncoding: "utf8", forceRfc822Attachments: true });
  const contentTypeHeader = email.headers.find((h) => h.key === "content-type")?.value ?? "text/plain";
  const read: ReadMessage = {
    subject: email.subject ?? "",
    contentType: contentTypeHeader.split(";")[0].trim().toLowerCase(),
    reportType: /report-type\s*=\s*"?([\w.-]+)"?/i.exec(contentTypeHeader)?.[1].toLowerCase() ?? "",
    text: email.text ?? "",
  };
  for (const part of email.attachments) {
    const type = part.mimeType.toLowerCase();
    const content = typeof part.content === "string" ? part.content : new TextDecoder().decode(part.content);
    if (DELIVERY_STATUS.has(type)) read.deliveryStatus ??= fieldGroups(content);
    else if (type === FEEDBACK_REPORT) read.feedbackReport ??= fieldGroups(content)[0];
    else if (QUOTED_MESSAGE.has(type)) read.originalHeaders ??= fieldGroups(headerBlock(content))[0];
  }
  return read;
}

/** The header of a message: everything before the first empty line. */
function headerBlock(message: string): string {
  const end = message.search(/\r?\n\r?\n/);
  return end < 0 ? message : message.slice(0, end);
}

/**
 * Blocks of `Name: value` fields separated by empty lines (RFC 3464 §2.1), folded lines
 * joined. The first occurrence of a name in a block wins.
 */
export function fieldGroups(text: string): Fields[] {
  const groups: Fields[] = [];
  let current: Fields | undefined;
  let last = "";
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") {
      current = undefined;
      continue;
    }
    if (/^[ \t]/.test(line) && current && last) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    if (!current) groups.push((current = new Map()));
    const name = line.slice(0, colon).trim().toLowerCase();
    last = current.has(name) ? "" : name;
    if (last) current.set(name, line.slice(colon + 1).trim());
  }
  return groups;
}
