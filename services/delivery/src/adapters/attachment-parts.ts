import { LRUCache } from "lru-cache";
import { buildHeaderValue } from "nodemailer/lib/mime-funcs";
import { detectMimeType } from "nodemailer/lib/mime-funcs/mime-types";
import type { EncodedPart } from "../domain/ports.js";
import { base64Lines, header } from "./mime.js";

/** An attachment as the content store holds it (StoredContent.attachments). */
export interface AttachmentSource {
  filename: string;
  content: Uint8Array;
  contentType: string;
  contentId: string;
}

/** Attachments base64-encoded so far by this process (tests prove retries reuse the parts). */
export const attachmentEncodings = { count: 0 };

// A type/subtype made of token characters: anything else would be a header we did not write.
const MIME_TYPE = /^[A-Za-z0-9!#$&^_.+\-]+\/[A-Za-z0-9!#$&^_.+\-]+$/;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f]+/g;

/**
 * One attachment as a finished MIME part: its headers (type and name, transfer encoding,
 * disposition with the file name in RFC 2231 form when not plain ASCII, Content-ID for an
 * inline one) and the base64 body in 76-character lines. The delimiters around it belong to
 * the message that uses it, so the same part goes into any number of messages.
 */
export function encodeAttachment(a: AttachmentSource): EncodedPart {
  attachmentEncodings.count += 1;
  const filename = a.filename.replace(CONTROLS, " ").trim() || "attachment";
  const type = MIME_TYPE.test(a.contentType) ? a.contentType.toLowerCase() : detectMimeType(filename);
  const contentId = a.contentId.replace(/[\s<>\u0000-\u001f\u007f]+/g, "");
  const lines = [
    header("Content-Type", buildHeaderValue({ value: type, params: { name: filename } })),
    "Content-Transfer-Encoding: base64",
    header("Content-Disposition", buildHeaderValue({ value: contentId ? "inline" : "attachment", params: { filename } })),
  ];
  if (contentId) lines.push(`Content-ID: <${contentId}>`);
  const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`);
  const content = Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength);
  return { inline: contentId !== "", bytes: Buffer.concat([head, base64Lines(content)]) };
}

/**
 * The encoded parts of each content's attachments, kept by (workspace, content ref) in an
 * LRU bounded by their bytes: an email's attachments are encoded once, and its retries (the
 * content is read again from the store) and its other recipients' jobs reuse the parts.
 * Content is immutable per ref, so a ref's parts never go stale.
 */
export class AttachmentParts {
  private readonly cache: LRUCache<string, readonly EncodedPart[]>;

  constructor(maxBytes: number) {
    this.cache = new LRUCache({
      maxSize: Math.max(1, maxBytes),
      // One email bigger than the whole budget is encoded per use rather than evicting everything.
      sizeCalculation: (parts) => Math.max(1, parts.reduce((n, p) => n + p.bytes.length, 0)),
    });
  }

  partsOf(workspaceId: string, contentRef: string, attachments: readonly AttachmentSource[]): readonly EncodedPart[] {
    if (attachments.length === 0) return [];
    const key = `${workspaceId}\u0000${contentRef}`;
    let parts = this.cache.get(key);
    if (!parts) {
      parts = attachments.map(encodeAttachment);
      this.cache.set(key, parts);
    }
    return parts;
  }
}
