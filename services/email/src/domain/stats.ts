import { badRequest } from "@mailroom/kit/errors.js";
import type { Clock, StatsCounterName, StatsCounters, StatsStore } from "./ports.js";
import { utcDay } from "./outcomes.js";
import { TAG_FILTER } from "./model.js";

/** Longest range one stats request may cover (inclusive days). */
export const MAX_STATS_DAYS = 366;
/** Range when none is given: the last 30 days, today included. */
export const DEFAULT_STATS_DAYS = 30;

export const COUNTER_NAMES: StatsCounterName[] = [
  "sent", "delivered", "bounced", "hardBounced", "failed", "complained", "opened", "clicked", "unsubscribed", "opens", "clicks",
];

export const zeroCounters = (): StatsCounters =>
  Object.fromEntries(COUNTER_NAMES.map((name) => [name, 0])) as StatsCounters;

function add(into: StatsCounters, from: Partial<StatsCounters>): void {
  for (const name of COUNTER_NAMES) into[name] += from[name] ?? 0;
}

export interface StatsQuery {
  /** YYYY-MM-DD or an ISO date-time (its UTC day); empty: DEFAULT_STATS_DAYS before `to`. */
  from?: string;
  /** YYYY-MM-DD or an ISO date-time; empty: today (UTC). */
  to?: string;
  groupBy?: string;
  /** Only emails carrying every one of these tags, each `name:value`. */
  tags?: string[];
}

export interface EmailStats {
  from: string;
  to: string;
  totals: StatsCounters;
  days: Array<{ date: string; counters: StatsCounters }>;
  groups: Array<{ groupBy: string; counters: StatsCounters }>;
}

const DAY_MS = 24 * 3600 * 1000;

function dayOf(value: string, name: string): Date {
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : /^\d{4}-\d{2}-\d{2}T/.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw badRequest("invalid_request", `${name} must be a date (YYYY-MM-DD, UTC) or an ISO 8601 date-time`);
  return new Date(`${utcDay(date)}T00:00:00Z`);
}

/**
 * Transactional stats of a workspace: every UTC day of the range (zeros included), the
 * totals and one entry per groupBy. Emails are counted on the day they were sent (cohorts),
 * so rates of a day relate that day's emails to what became of them.
 */
export async function emailStats(stats: StatsStore, clock: Clock, workspaceId: string, query: StatsQuery): Promise<EmailStats> {
  const to = query.to ? dayOf(query.to, "to") : dayOf(utcDay(clock.now()), "to");
  const from = query.from ? dayOf(query.from, "from") : new Date(to.getTime() - (DEFAULT_STATS_DAYS - 1) * DAY_MS);
  if (from > to) throw badRequest("invalid_request", "from must not be after to");
  const span = Math.round((to.getTime() - from.getTime()) / DAY_MS) + 1;
  if (span > MAX_STATS_DAYS) throw badRequest("invalid_request", `The range covers ${span} days; at most ${MAX_STATS_DAYS} are allowed`);

  for (const tag of query.tags ?? []) {
    if (!TAG_FILTER.test(tag)) throw badRequest("invalid_request", `tag ${JSON.stringify(tag.slice(0, 80))} must be name:value (letters, digits, "_" and "-", at most 256 each)`);
  }
  const rows = query.tags?.length
    ? await stats.taggedRows(workspaceId, utcDay(from), utcDay(to), query.tags, query.groupBy)
    : await stats.rows(workspaceId, utcDay(from), utcDay(to), query.groupBy);
  const days = new Map<string, StatsCounters>();
  for (let t = from.getTime(); t <= to.getTime(); t += DAY_MS) days.set(utcDay(new Date(t)), zeroCounters());
  const groups = new Map<string, StatsCounters>();
  const totals = zeroCounters();
  for (const row of rows) {
    const day = days.get(row.day);
    if (!day) continue;
    add(day, row.counters);
    add(totals, row.counters);
    if (!groups.has(row.groupBy)) groups.set(row.groupBy, zeroCounters());
    add(groups.get(row.groupBy)!, row.counters);
  }
  return {
    from: utcDay(from),
    to: utcDay(to),
    totals,
    days: [...days].map(([date, counters]) => ({ date, counters })),
    groups: [...groups]
      .map(([groupBy, counters]) => ({ groupBy, counters }))
      .sort((a, b) => b.counters.sent - a.counters.sent || a.groupBy.localeCompare(b.groupBy)),
  };
}
