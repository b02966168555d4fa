import { randomUUID } from "node:crypto";

// Printable ASCII, no leading or trailing space, at most 128 characters.
const ACCEPTABLE_ID = /^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$/;

/** The caller's `x-request-id` when it is acceptable, else a new one. */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === "string" && ACCEPTABLE_ID.test(given) ? given : randomUUID();
}
