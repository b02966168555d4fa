import type { Webhook } from "./model.js";

export interface PauseRule {
  /** Every attempt failed for at least this long… */
  afterMs: number;
  /** …and at least this many attempts in a row. */
  minFailures: number;
}

/**
 * An endpoint is paused when its deliveries keep failing: every attempt since `failingSince`
 * failed, that run lasts `afterMs` (24 h by default) and holds at least `minFailures`
 * attempts (10 by default). Time rather than a count alone, so a burst of events during
 * a short outage never pauses a busy endpoint; a count as well, so one lone failure a
 * day apart does not either.
 */
export function shouldPause(webhook: Pick<Webhook, "consecutiveFailures" | "failingSince">, now: Date, rule: PauseRule): boolean {
  if (!webhook.failingSince) return false;
  return webhook.consecutiveFailures >= rule.minFailures && now.getTime() - webhook.failingSince.getTime() >= rule.afterMs;
}

export function pauseReason(webhook: Pick<Webhook, "consecutiveFailures" | "failingSince">, lastError: string): string {
  const since = webhook.failingSince?.toISOString() ?? "?";
  return `Paused automatically: ${webhook.consecutiveFailures} delivery attempts in a row failed since ${since} (last: ${lastError})`;
}
