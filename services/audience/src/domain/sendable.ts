import type { Suppression } from "@mailroom/records/model.js";
import type { Suppressions } from "./suppression.js";
import type { UsageReserver } from "@mailroom/records/account-ports.js";

export interface SendableReservation {
  /** The suppressed addresses among the recipients, each once; never counted. */
  suppressed: Suppression[];
  granted: boolean;
  /** Sends reserved: the recipients not suppressed (0 unless granted). */
  reserved: number;
  used: number;
  limit: number;
  /** "YYYY-MM" of the reservation; empty when nothing had to be counted. */
  period: string;
}

/**
 * The suppression check and the usage reservation of one send request in one step (one
 * round trip for the email service): recipients on the suppression list are left out and
 * the others are reserved all or nothing through the same compare-and-set as
 * the accounts unit's ReserveUsage, so parallel calls never overshoot the limit. A recipient listed twice
 * is two emails and counts twice.
 */
export async function reserveSendable(
  dir: { suppressions: Suppressions; usage: UsageReserver },
  workspaceId: string,
  recipients: string[],
): Promise<SendableReservation> {
  const suppressed = await dir.suppressions.check(workspaceId, recipients);
  const blocked = new Set(suppressed.map((s) => s.emailLower));
  const count = recipients.filter((r) => !blocked.has(String(r).trim().toLowerCase())).length;
  if (count === 0) return { suppressed, granted: true, reserved: 0, used: 0, limit: 0, period: "" };
  const usage = await dir.usage.reserve(workspaceId, count);
  return { suppressed, ...usage, reserved: usage.granted ? count : 0 };
}
