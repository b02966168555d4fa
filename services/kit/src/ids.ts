import { randomBytes } from "node:crypto";
import { monotonicFactory } from "ulidx";

/**
 * ulidx draws one crypto.getRandomValues call per character (16 per id), which showed up
 * as several percent of a send's CPU. Same entropy source, drawn 4 KB at a time.
 */
let pool = randomBytes(4096);
let offset = 0;
function pooledRandom(): number {
  if (offset + 4 > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  const value = pool.readUInt32BE(offset) / 0x1_0000_0000;
  offset += 4;
  return value;
}

const ulid = monotonicFactory(pooledRandom);

/** Sortable, unique ids with a type prefix: trs_…, cmp_…, ws_…, ctc_… */
export function newId(prefix: string): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** Message-ID value (without angle brackets) for a message sent from `domain`. */
export function newMessageId(domain: string): string {
  return `${ulid().toLowerCase()}@${domain || "mailroom.local"}`;
}
