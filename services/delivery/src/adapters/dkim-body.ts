import { createHash } from "node:crypto";

const CR = 13;
const LF = 10;
const SP = 32;
const TAB = 9;
const CRLF = Buffer.from("\r\n");

/**
 * The DKIM body hash (sha256, base64) under relaxed canonicalization (RFC 6376 3.4.4),
 * the one nodemailer's signer uses: trailing whitespace of each line dropped, runs of
 * whitespace made one space, empty lines at the end ignored, a non-empty body ending in
 * CRLF. Bodies this service writes are nearly always canonical already (CRLF lines,
 * base64 or text without doubled spaces): those are hashed as they are, after a few
 * native searches; anything else goes through the byte-by-byte canonicalization.
 */
export function relaxedBodyHash(body: Buffer): string {
  const hash = createHash("sha256");
  if (isCanonicalExceptEnd(body)) {
    let end = body.length;
    while (end >= 2 && body[end - 2] === CR && body[end - 1] === LF) end -= 2;
    if (end > 0) hash.update(body.subarray(0, end)).update(CRLF);
  } else {
    hash.update(canonicalize(body));
  }
  return hash.digest("base64");
}

/** No whitespace run, no whitespace before a line break or at the end, only CRLF breaks. */
function isCanonicalExceptEnd(b: Buffer): boolean {
  if (b.length === 0) return true;
  if (b.includes(TAB) || b.includes("  ", 0, "latin1") || b.includes(" \r", 0, "latin1")) return false;
  const last = b[b.length - 1];
  if (last === SP || last === CR) return false;
  for (let i = b.indexOf(LF); i >= 0; i = b.indexOf(LF, i + 1)) if (i === 0 || b[i - 1] !== CR) return false;
  for (let i = b.indexOf(CR); i >= 0; i = b.indexOf(CR, i + 1)) if (b[i + 1] !== LF) return false;
  // A line holding a single space became empty: possible only right after a break or at the start.
  if (b[0] === SP && (b.length === 1 || b[1] === CR)) return false;
  return !b.includes("\n \r", 0, "latin1");
}

/** The whole canonical body, byte by byte (the rare case). */
function canonicalize(b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(b.length * 2 + 2);
  let o = 0;
  let lineStart = 0; // output position where the current line began
  let pendingSpace = false;
  let lastContentEnd = 0; // output length up to the last non-empty line's CRLF
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c === LF || (c === CR && b[i + 1] === LF)) {
      if (c === CR) i++;
      // End of line: drop trailing whitespace; keep the line break.
      pendingSpace = false;
      out[o++] = CR;
      out[o++] = LF;
      if (o - 2 > lineStart) lastContentEnd = o;
      lineStart = o;
      continue;
    }
    if (c === SP || c === TAB) {
      pendingSpace = true;
      continue;
    }
    if (pendingSpace) {
      out[o++] = SP;
      pendingSpace = false;
    }
    out[o++] = c;
  }
  if (o > lineStart) {
    // Last line without a break: it gets one.
    out[o++] = CR;
    out[o++] = LF;
    lastContentEnd = o;
  }
  return out.subarray(0, lastContentEnd);
}
