import type { Clock, EmailRepository } from "./ports.js";

/** What the delivery service reported for one transactional email. */
export interface DeliveryOutcome {
  emailId: string;
  kind: "sent" | "bounced" | "failed" | "suppressed" | "other";
  detail?: string;
  smtpCode?: number;
}

/**
 * Applies a delivery outcome to the email's status. SMTP acceptance by the recipient's
 * server makes it DELIVERED; a bounce or a final failure makes it FAILED with the
 * reason. Transitions are compare-and-set on the status, so replays and late events
 * are harmless. Returns whether the status changed.
 */
export async function applyOutcome(emails: EmailRepository, clock: Clock, outcome: DeliveryOutcome): Promise<boolean> {
  const at = clock.now();
  switch (outcome.kind) {
    case "sent":
      return emails.transition(outcome.emailId, ["SENT"], "DELIVERED", at);
    case "bounced":
    case "failed":
    case "suppressed": {
      const what = outcome.kind === "bounced" ? "Bounced" : outcome.kind === "suppressed" ? "Suppressed" : "Delivery failed";
      const code = outcome.smtpCode ? ` (${outcome.smtpCode})` : "";
      const reason = `${what}${code}${outcome.detail ? `: ${outcome.detail}` : ""}`.slice(0, 1000);
      // Only a bounce can follow acceptance (an asynchronous bounce); a "failed" after
      // DELIVERED would be a late republish that found the content gone, not a real failure.
      const from: Array<"SENT" | "DELIVERED"> = outcome.kind === "bounced" ? ["SENT", "DELIVERED"] : ["SENT"];
      return emails.transition(outcome.emailId, from, "FAILED", at, reason);
    }
    default:
      return false;
  }
}
