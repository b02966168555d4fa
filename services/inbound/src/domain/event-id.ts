import { createHash } from "node:crypto";

/** The same report for the same delivery always gets the same id: redelivery is deduplicated. */
export function eventId(parts: string[]): string {
  return `evt_${createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 32)}`;
}
