/**
 * Compact binary packing of the identifiers a tracking token carries. Mailroom's ids are
 * `<prefix>_<ulid>` (ws_, trs_, cmp_, ctc_, …); a lowercase ULID packs into 16 bytes
 * instead of 26 characters. Anything else is kept as literal UTF-8, so every string
 * round-trips exactly. (Tag 65, for Message-IDs `<ulid>@<domain>`, is no longer written by
 * the tokens, which left the Message-ID out in format 3; it stays readable.)
 *
 * One tag byte per id:
 *   0            empty string
 *   1..63        PREFIXES[tag - 1] + "_" + ULID (16 bytes)
 *   64           bare ULID (16 bytes)
 *   65           ULID (16 bytes) + "@" + domain (1 length byte + UTF-8)
 *   66           literal, 2-byte length + UTF-8 (long values)
 *   128..255     literal of (tag - 128) bytes of UTF-8
 */

/** Append-only: a tag's meaning must never change, or tokens already sent stop parsing. */
const PREFIXES = ["ws", "trs", "cmp", "ctc", "bc", "tpl", "key", "msg", "evt", "wh", "in"] as const;

const TAG_BARE_ULID = 64;
const TAG_ULID_AT_DOMAIN = 65;
const TAG_LONG_LITERAL = 66;
const TAG_SHORT_LITERAL = 128;

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < CROCKFORD.length; i++) VALUE[CROCKFORD.charCodeAt(i)] = i;
const PREFIX_TAG = new Map<string, number>(PREFIXES.map((p, i) => [p, i + 1]));

/** Whether s[from, from+26) is a lowercase canonical ULID (first character 0-7: 128 bits). */
function isUlidAt(s: string, from: number): boolean {
  if (s.length < from + 26) return false;
  const first = s.charCodeAt(from);
  if (first < 48 || first > 55) return false;
  for (let i = from + 1; i < from + 26; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || VALUE[c] < 0) return false;
  }
  return true;
}

export class Writer {
  private buf = Buffer.allocUnsafe(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }

  byte(v: number): void {
    this.room(1);
    this.buf[this.length++] = v;
  }

  uint16(v: number): void {
    this.room(2);
    this.buf.writeUInt16BE(v, this.length);
    this.length += 2;
  }

  varint(v: number): void {
    while (v >= 0x80) {
      this.byte((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    this.byte(v);
  }

  utf8(s: string): void {
    this.room(Buffer.byteLength(s));
    this.length += this.buf.write(s, this.length, "utf8");
  }

  /** 26 Crockford characters of s from `from` as 16 bytes (the first carries 3 bits). */
  private ulid(s: string, from: number): void {
    this.room(16);
    let acc = VALUE[s.charCodeAt(from)];
    let bits = 3;
    for (let i = from + 1; i < from + 26; i++) {
      acc = (acc << 5) | VALUE[s.charCodeAt(i)];
      bits += 5;
      if (bits >= 8) {
        bits -= 8;
        this.buf[this.length++] = (acc >>> bits) & 0xff;
        acc &= (1 << bits) - 1;
      }
    }
  }

  private literal(s: string): void {
    const n = Buffer.byteLength(s);
    if (n < 128) this.byte(TAG_SHORT_LITERAL + n);
    else {
      if (n > 0xffff) throw new RangeError("token field too long");
      this.byte(TAG_LONG_LITERAL);
      this.uint16(n);
    }
    this.utf8(s);
  }

  /** An id or Message-ID in its most compact form. */
  id(s: string): void {
    if (s === "") return this.byte(0);
    const underscore = s.indexOf("_");
    if (underscore > 0 && s.length === underscore + 27 && isUlidAt(s, underscore + 1)) {
      const tag = PREFIX_TAG.get(s.slice(0, underscore));
      if (tag !== undefined) {
        this.byte(tag);
        return this.ulid(s, underscore + 1);
      }
    }
    if (s.length === 26 && isUlidAt(s, 0)) {
      this.byte(TAG_BARE_ULID);
      return this.ulid(s, 0);
    }
    if (s.length > 27 && s.charCodeAt(26) === 64 /* @ */ && isUlidAt(s, 0)) {
      const domain = s.slice(27);
      if (Buffer.byteLength(domain) < 256) {
        this.byte(TAG_ULID_AT_DOMAIN);
        this.ulid(s, 0);
        this.byte(Buffer.byteLength(domain));
        return this.utf8(domain);
      }
    }
    this.literal(s);
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** Reads what Writer wrote; every method throws RangeError on malformed input. */
export class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new RangeError("token truncated");
  }

  byte(): number {
    this.need(1);
    return this.buf[this.pos++];
  }

  uint16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  varint(): number {
    let v = 0;
    for (let shift = 1; ; shift *= 128) {
      const b = this.byte();
      v += (b & 0x7f) * shift;
      if (!(b & 0x80)) break;
      if (shift > 2 ** 42) throw new RangeError("varint too long");
    }
    return v;
  }

  utf8(n: number): string {
    this.need(n);
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  rest(): string {
    return this.utf8(this.buf.length - this.pos);
  }

  private ulid(): string {
    this.need(16);
    let out = "";
    let acc = 0;
    let bits = 0;
    const end = this.pos + 16;
    // 128 bits: 3 for the first character, then 25 × 5.
    let first = true;
    for (let i = this.pos; i < end; i++) {
      acc = (acc << 8) | this.buf[i];
      bits += 8;
      if (first) {
        bits -= 3;
        out += CROCKFORD[(acc >>> bits) & 0x07];
        acc &= (1 << bits) - 1;
        first = false;
      }
      while (bits >= 5) {
        bits -= 5;
        out += CROCKFORD[(acc >>> bits) & 0x1f];
        acc &= (1 << bits) - 1;
      }
    }
    this.pos = end;
    return out;
  }

  id(): string {
    const tag = this.byte();
    if (tag === 0) return "";
    if (tag <= PREFIXES.length) return `${PREFIXES[tag - 1]}_${this.ulid()}`;
    if (tag === TAG_BARE_ULID) return this.ulid();
    if (tag === TAG_ULID_AT_DOMAIN) {
      const ulid = this.ulid();
      return `${ulid}@${this.utf8(this.byte())}`;
    }
    if (tag === TAG_LONG_LITERAL) return this.utf8(this.uint16());
    if (tag >= TAG_SHORT_LITERAL) return this.utf8(tag - TAG_SHORT_LITERAL);
    throw new RangeError(`unknown id tag ${tag}`);
  }

  get done(): boolean {
    return this.pos === this.buf.length;
  }
}
