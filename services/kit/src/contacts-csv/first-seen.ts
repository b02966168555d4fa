import { hash } from "node:crypto";

/**
 * The first line each key (a lower-cased email) was seen on, in ~12 bytes a key: a
 * 64-bit fingerprint and a line number in an open-addressing table of typed arrays. A
 * Map of a million email strings would take ~100 MB; this takes ~24 MB. Two different
 * keys share a fingerprint with odds of about 1 in 10^7 for a million keys.
 */
export class FirstSeen {
  private hi: Uint32Array;
  private lo: Uint32Array;
  /** 0 marks an empty slot: lines are 1-based. */
  private lines: Uint32Array;
  private used = 0;

  constructor(initialCapacity = 1 << 12) {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(16, initialCapacity)));
    this.hi = new Uint32Array(capacity);
    this.lo = new Uint32Array(capacity);
    this.lines = new Uint32Array(capacity);
  }

  get size(): number {
    return this.used;
  }

  /** The line `key` was first seen on; records `line` when it is new. */
  firstLine(key: string, line: number): number | undefined {
    if (!(line >= 1 && line <= 0xffffffff)) throw new RangeError(`line ${line} is out of range`);
    const digest = hash("sha1", key, "buffer");
    const hi = digest.readUInt32LE(0);
    const lo = digest.readUInt32LE(4);
    const mask = this.lines.length - 1;
    for (let i = lo & mask; ; i = (i + 1) & mask) {
      if (this.lines[i] === 0) {
        this.hi[i] = hi;
        this.lo[i] = lo;
        this.lines[i] = line;
        if (++this.used * 2 > this.lines.length) this.grow();
        return undefined;
      }
      if (this.hi[i] === hi && this.lo[i] === lo) return this.lines[i];
    }
  }

  private grow(): void {
    const { hi, lo, lines } = this;
    const capacity = lines.length * 2;
    const mask = capacity - 1;
    this.hi = new Uint32Array(capacity);
    this.lo = new Uint32Array(capacity);
    this.lines = new Uint32Array(capacity);
    for (let j = 0; j < lines.length; j++) {
      if (lines[j] === 0) continue;
      let i = lo[j] & mask;
      while (this.lines[i] !== 0) i = (i + 1) & mask;
      this.hi[i] = hi[j];
      this.lo[i] = lo[j];
      this.lines[i] = lines[j];
    }
  }
}
