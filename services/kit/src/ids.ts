import { monotonicFactory } from "ulidx";

const ulid = monotonicFactory();

/** Sortable, unique ids with a type prefix: trs_…, cmp_…, ws_…, ctc_… */
export function newId(prefix: string): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** Message-ID value (without angle brackets) for a message sent from `domain`. */
export function newMessageId(domain: string): string {
  return `${ulid().toLowerCase()}@${domain || "mailroom.local"}`;
}
