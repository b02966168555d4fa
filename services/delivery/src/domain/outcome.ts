import { createHash } from "node:crypto";
import { SmtpFailure, type OutcomeType } from "./ports.js";

export type SmtpVerdict =
  | { kind: "transient"; code: number; detail: string }
  | { kind: "permanent"; code: number; detail: string };

/**
 * A 5xx reply to RCPT TO or DATA is a hard bounce; 4xx, no reply at all (refused,
 * dropped, timed out), a relay that refuses us (auth, MAIL FROM) or anything unexpected
 * is worth another try later, up to the attempt limit.
 */
export function classifySmtpError(err: unknown): SmtpVerdict {
  const code = err instanceof SmtpFailure ? err.code : 0;
  const detail = clip(err instanceof Error ? err.message : String(err));
  if (err instanceof SmtpFailure && err.aboutRecipient && code >= 500 && code < 600) return { kind: "permanent", code, detail };
  return { kind: "transient", code, detail };
}

/**
 * Event ids are derived, never random: republishing the same outcome (after a crash
 * between the store write and the publish) is deduplicated by JetStream's msgID window.
 */
export function outcomeEventId(deliveryId: string, type: OutcomeType, attempt: number): string {
  const digest = createHash("sha256").update(`${deliveryId}\u0000${type}\u0000${attempt}`).digest("hex");
  return `evt_${digest.slice(0, 32)}`;
}

/** Exponential backoff for SMTP retries: base, 2×base, 4×base … capped. */
export function retryDelayMs(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

export function clip(text: string, max = 500): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}
