import type { Clock, EmailStore, Milestone, OutcomeChange, OutcomeStore, StatsCounters, StatsStore } from "./ports.js";

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
export async function applyOutcome(emails: EmailStore, clock: Clock, outcome: DeliveryOutcome): Promise<boolean> {
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

/** One delivery or tracking event of a transactional email, in domain terms. */
export interface OutcomeEvent {
  eventId: string;
  emailId: string;
  /** "confirmed": a relay provider reported the recipient's server accepted it (after "sent"). */
  kind: DeliveryOutcome["kind"] | "deferred" | "opened" | "clicked" | "complained" | "unsubscribed" | "confirmed" | "replied";
  at: Date;
  detail?: string;
  smtpCode?: number;
  /** Bounces: permanent (hard) or transient (soft). */
  permanent?: boolean;
  /** Clicks: the link's target. */
  url?: string;
  /** Replies: the received email ("rcv_…", the event's detail). */
  receivedId?: string;
  /** The delivery route that carried (or tried) it; on provider reports, the route whose provider reported it. */
  route?: string;
}

/** Kinds that say which route carried or tried the message: they update the email's route. */
const ROUTED: ReadonlySet<OutcomeEvent["kind"]> = new Set(["sent", "deferred", "bounced", "failed"]);

const CHANGE: Partial<Record<OutcomeEvent["kind"], OutcomeChange["type"]>> = {
  sent: "DELIVERED",
  deferred: "DEFERRED",
  bounced: "BOUNCED",
  failed: "FAILED",
  opened: "OPENED",
  clicked: "CLICKED",
  complained: "COMPLAINED",
  unsubscribed: "UNSUBSCRIBED",
};

/**
 * The milestones an event can reach. "sent" means handed to a receiving server, whatever
 * it answered, so it is the first of delivered, bounced or failed (the denominator of rates).
 */
function milestonesOf(event: OutcomeEvent): Milestone[] {
  switch (event.kind) {
    case "sent":
      return ["sent", "delivered"];
    case "bounced":
      return event.permanent ? ["sent", "bounced", "hardBounced"] : ["sent", "bounced"];
    case "failed":
      return ["sent", "failed"];
    case "opened":
    case "clicked":
    case "complained":
    case "unsubscribed":
      return [event.kind];
    default:
      return [];
  }
}

/** The UTC day of a date, YYYY-MM-DD: stats days are UTC days. */
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);

export interface OutcomeDeps {
  emails: EmailStore;
  outcomes: OutcomeStore;
  stats: StatsStore;
  clock: Clock;
}

/**
 * Applies one event of a transactional email: its status (compare-and-set), its per-email
 * outcomes (once per event id) and the daily stats of the day the email was sent (each
 * milestone once per email, opens and clicks once per event). Safe to call again with the
 * same event: a redelivery changes nothing. Returns whether the event was new.
 *
 * Stats are written after the email's own record, each count taken back from the record by
 * compare-and-set first: a redelivery after a failure between the writes still counts it,
 * and only a process dying between taking a count and writing it loses one (never twice).
 */
export async function recordEvent(deps: OutcomeDeps, event: OutcomeEvent): Promise<boolean> {
  if (event.kind === "sent" || event.kind === "bounced" || event.kind === "failed" || event.kind === "suppressed") {
    await applyOutcome(deps.emails, deps.clock, { ...event, kind: event.kind });
  }
  const type = CHANGE[event.kind];
  // A provider's confirmation changes neither the status (SENT made it DELIVERED) nor the
  // milestones, stats or latest event: it only adds itself to the email's timeline.
  // A reply neither: it is counted on the email and shown on its timeline (DESIGN §10.4).
  if (!type && event.kind !== "confirmed" && event.kind !== "replied") return false;
  const change: OutcomeChange = { type, at: event.at };
  if (event.kind === "opened") change.open = true;
  if (event.kind === "clicked" && event.url) change.click = { url: event.url };
  if (event.kind === "bounced") change.bounce = { hard: event.permanent === true };
  if (event.kind === "deferred") change.deferral = { detail: event.detail?.slice(0, 300) };
  if (event.kind === "confirmed") change.confirmed = true;
  if (event.kind === "replied") change.reply = { receivedId: event.receivedId ?? "" };
  if (event.route && (ROUTED.has(event.kind) || event.kind === "confirmed")) change.route = event.route;
  const result = await deps.outcomes.applyOnce(event.emailId, event.eventId, change);
  if (!result) return false;

  const by: Partial<StatsCounters> = {};
  if ((event.kind === "opened" || change.click) && (await deps.outcomes.takeOwedCount(event.emailId, event.eventId))) {
    by[event.kind === "opened" ? "opens" : "clicks"] = 1;
  }
  for (const milestone of milestonesOf(event)) {
    if (await deps.outcomes.claimAndCount(event.emailId, milestone, event.eventId, event.at, event.route)) by[milestone] = 1;
  }
  if (Object.keys(by).length) {
    const { workspaceId, groupBy, sentAt } = result.target;
    await deps.stats.increment(workspaceId, utcDay(sentAt), groupBy, by);
  }
  return result.applied;
}
