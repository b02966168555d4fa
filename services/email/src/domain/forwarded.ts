import { addressParser, decodeWords } from "postal-mime";

/** The header block is read from at most this much of the message (a header block is a few KB). */
const HEADER_SCAN_BYTES = 256 * 1024;

export interface ForwardedSummary {
  /** The From header as written (encoded words decoded), e.g. `Ann Lee <ann@sender.example>`. */
  from: string;
  fromAddress: string;
  fromName: string;
  subject: string;
}

/**
 * What a forwarded message's record shows (DESIGN §10.4: recorded like any email): its From and
 * Subject, read from the header block only — the message itself is sent as it is, never parsed.
 */
export function forwardedSummary(raw: Uint8Array): ForwardedSummary {
  const scan = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, HEADER_SCAN_BYTES));
  let end = scan.indexOf("\r\n\r\n");
  const lf = scan.indexOf("\n\n");
  if (end < 0 || (lf >= 0 && lf < end)) end = lf;
  // RFC 6532 headers are UTF-8; a stray 8-bit byte of another charset becomes U+FFFD, harmlessly.
  const head = scan.subarray(0, end < 0 ? scan.length : end).toString("utf8");
  const fields = new Map<string, string>();
  for (const line of head.split(/\r?\n(?![ \t])/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!fields.has(name)) fields.set(name, line.slice(colon + 1).replace(/\r?\n[ \t]/g, " ").trim());
  }
  const clean = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, " ").trim();
  const subject = clean(decodeWords(fields.get("subject") ?? "")).slice(0, 998);
  const fromField = fields.get("from") ?? "";
  const first = addressParser(fromField)[0];
  const fromAddress = first && "address" in first && first.address ? clean(first.address) : "";
  const fromName = first ? clean(decodeWords(first.name ?? "")) : "";
  return { from: clean(decodeWords(fromField)).slice(0, 998), fromAddress, fromName, subject };
}
