import { z } from "zod";
import type { StatsCounters } from "@mailroom/proto/email/v1/email_pb.js";

/**
 * Outcome counters and rates as the public API shows them (email stats and broadcast
 * stats). A rate is a count divided by `sent`, rounded to 4 decimals (0 when nothing was sent).
 */

export const rate = (count: number, sent: number) => (sent > 0 ? Math.round((count / sent) * 10_000) / 10_000 : 0);

const RATED = ["delivered", "bounced", "failed", "complained", "opened", "clicked", "unsubscribed"] as const;

export function ratesOf(counts: Partial<Record<(typeof RATED)[number], number>> & { sent: number }): Record<string, number> {
  return Object.fromEntries(RATED.filter((name) => counts[name] !== undefined).map((name) => [name, rate(counts[name]!, counts.sent)]));
}

/** Email counters with their rates. */
export function emailCountersJson(c: StatsCounters | undefined): Record<string, unknown> {
  const counts = {
    sent: Number(c?.sent ?? 0n),
    delivered: Number(c?.delivered ?? 0n),
    bounced: Number(c?.bounced ?? 0n),
    hardBounced: Number(c?.hardBounced ?? 0n),
    failed: Number(c?.failed ?? 0n),
    complained: Number(c?.complained ?? 0n),
    opened: Number(c?.opened ?? 0n),
    clicked: Number(c?.clicked ?? 0n),
    unsubscribed: Number(c?.unsubscribed ?? 0n),
    opens: Number(c?.opens ?? 0n),
    clicks: Number(c?.clicks ?? 0n),
  };
  return { ...counts, rates: ratesOf(counts) };
}

const count = (description: string) => z.number().int().min(0).meta({ description });
const ratesSchema = z
  .record(z.string(), z.number().min(0))
  .meta({ id: "OutcomeRates", description: "Each count divided by `sent` (0 to 1, 4 decimals; 0 when nothing was sent)." });

const emailCounterFields = {
  sent: count("Emails handed to a receiving server (delivered, bounced or failed)."),
  delivered: count("Accepted by the relay or the receiving server."),
  bounced: count("Bounced, hard or soft (each email once)."),
  hardBounced: count("Bounced permanently (the address is suppressed)."),
  failed: count("Failed for good after delivery attempts."),
  complained: count("Marked as spam by the recipient."),
  opened: count("Opened at least once (unique)."),
  clicked: count("Clicked at least once (unique)."),
  unsubscribed: count("Unsubscribed from these emails."),
  opens: count("Every open, repeats included."),
  clicks: count("Every click, repeats included."),
  rates: ratesSchema,
};

export const emailStatsSchema = z
  .strictObject({
    stats: z.strictObject({
      from: z.iso.date(),
      to: z.iso.date(),
      groupBy: z.string().optional().meta({ description: "The group asked for, when one was." }),
      tags: z.array(z.string()).optional().meta({ description: "The tag filters asked for (`name:value`), when there were some." }),
      totals: z.strictObject(emailCounterFields),
      days: z.array(z.strictObject({ date: z.iso.date(), ...emailCounterFields })).meta({ description: "Every day of the range, oldest first (zeros included)." }),
      groups: z.array(z.strictObject({ groupBy: z.string().meta({ description: "`\"\"` for emails sent without one." }), ...emailCounterFields })).meta({ description: "One entry per groupBy that has counts, most sent first." }),
    }),
  })
  .meta({ id: "EmailStats" });

export const broadcastStatsSchema = z
  .strictObject({
    stats: z.strictObject({
      broadcastId: z.string(),
      status: z.enum(["DRAFT", "SCHEDULED", "IN_PROGRESS", "COMPLETED"]),
      recipients: count("Audience resolved when sending started."),
      released: count("Handed to delivery (or settled without it)."),
      sent: count("Accepted by the receiving server (or relay)."),
      delivered: count("Sent and not bounced afterwards."),
      bounced: count("Bounced."),
      failed: count("Failed."),
      suppressed: count("On the suppression list when released; never sent."),
      deferred: count("Deferred (4xx) at least once."),
      opened: count("Opened (unique)."),
      clicked: count("Clicked (unique)."),
      unsubscribed: count("Unsubscribed."),
      replied: count("Recipients who replied (unique): replies received by an inbound domain and matched to this broadcast."),
      rates: ratesSchema,
    }),
  })
  .meta({ id: "BroadcastStats" });
