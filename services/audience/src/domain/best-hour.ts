/**
 * Send-time optimisation (DESIGN §10.5, OPTIMAL broadcasts): when a contact gets a broadcast,
 * from its opens and clicks of the last 90 days. Each event's time goes into a histogram of the
 * contact's local hours of the week (pure functions below); planBestHours does that for a page
 * of contacts over the engagement store's port (the audience unit's PlanBestHours).
 *
 * - At least WEEK_MIN_EVENTS events: the hour of the week with the most events among the hours
 *   the 24-hour window after the scheduled time covers (those that hold no event at all fall
 *   back to the day below);
 * - at least DAY_MIN_EVENTS (history thin for 168 hours of the week): the hour of the day with
 *   the most events (every hour of the day is in the window once);
 * - fewer: no plan (the broadcast sends the contact as SMART does).
 *
 * The contact gets it at the first moment of that hour in its own zone at or after the window's
 * start (the start itself when the window opens inside that hour), so never 24 hours or more
 * after it. Ties go to the earlier hour.
 */
import { isTimeZone, wallAt } from "@mailroom/kit/time-zones.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How far back opens and clicks count. */
export const HISTORY_DAYS = 90;
/** Fewer opens and clicks in HISTORY_DAYS: no plan (as SMART). */
export const DAY_MIN_EVENTS = 3;
/** Fewer (but at least DAY_MIN_EVENTS): "thin", the hour of the day instead of the week's. */
export const WEEK_MIN_EVENTS = 10;
/** Nobody later than this after the window's start. */
export const WINDOW_MS = DAY;
export const HOURS_OF_WEEK = 168;

export type BestHourBasis = "week" | "day" | "none";

export interface BestHourPlan {
  /** When the contact's message is due (epoch ms); absent without enough history. */
  dueAt?: number;
  basis: BestHourBasis;
  events: number;
}

/**
 * A zone's UTC offset at any instant, cached per UTC day (an offset changes at most once a
 * day in every real zone; the change is found to the minute): the few Intl calls a day costs
 * are shared by every event and contact of the zone, where one per event would cost seconds
 * per million.
 */
export class ZoneClock {
  private readonly days = new Map<number, { at: number; before: number; after: number }>();
  readonly timeZone: string;

  constructor(timeZone: string) {
    this.timeZone = isTimeZone(timeZone) ? timeZone : "UTC";
  }

  private rawOffset(instant: number): number {
    return wallAt(instant, this.timeZone) - Math.floor(instant / 1000) * 1000;
  }

  /** Wall minus UTC at `instant`, in ms. */
  offsetAt(instant: number): number {
    if (this.timeZone === "UTC") return 0;
    const day = Math.floor(instant / DAY);
    let d = this.days.get(day);
    if (!d) {
      const before = this.rawOffset(day * DAY);
      const after = this.rawOffset((day + 1) * DAY);
      let at = Number.POSITIVE_INFINITY;
      if (before !== after) {
        // The first minute on the new offset.
        let lo = day * 24 * 60;
        let hi = (day + 1) * 24 * 60;
        while (hi - lo > 1) {
          const mid = Math.floor((lo + hi) / 2);
          if (this.rawOffset(mid * MINUTE) === after) hi = mid;
          else lo = mid;
        }
        at = hi * MINUTE;
      }
      d = { at, before, after };
      // About 11 years of days per zone at most (a long-running process sees new ones daily).
      if (this.days.size >= 4_000) this.days.clear();
      this.days.set(day, d);
    }
    return instant < d.at ? d.before : d.after;
  }

  /** The local wall clock at `instant`, as the ms of a UTC date with the same fields. */
  wall(instant: number): number {
    return instant + this.offsetAt(instant);
  }

  /** The first instant whose wall clock reads `wall`; undefined when it never does (a spring-forward gap). */
  instantOf(wall: number): number | undefined {
    let first: number | undefined;
    for (const probe of [wall - 36 * HOUR, wall + 36 * HOUR]) {
      const t = wall - this.offsetAt(probe);
      if (this.wall(t) === wall && (first === undefined || t < first)) first = t;
    }
    return first;
  }
}

/** isTimeZone per name, remembered (it builds an Intl formatter: a tenth of a millisecond each time). */
const zoneNames = new Map<string, boolean>();
function knownZone(name: string): boolean {
  let known = zoneNames.get(name);
  if (known === undefined) {
    known = isTimeZone(name);
    // Names come from contacts' properties: a bounded memory, whatever they hold.
    if (zoneNames.size >= 10_000) zoneNames.clear();
    zoneNames.set(name, known);
  }
  return known;
}

const clocks = new Map<string, ZoneClock>();
/** The process's clock of a (valid) zone: its cached days serve every plan. */
export function clockOf(timeZone: string): ZoneClock {
  let clock = clocks.get(timeZone);
  if (!clock) clocks.set(timeZone, (clock = new ZoneClock(timeZone)));
  return clock;
}

/** The hour of the week (Monday 00:00 is 0) a wall-clock reading falls in. */
export function hourOfWeek(wall: number): number {
  const day = Math.floor(wall / DAY);
  // 1 January 1970 was a Thursday (3 with Monday as 0).
  const weekday = (((day + 3) % 7) + 7) % 7;
  return weekday * 24 + Math.floor((wall - day * DAY) / HOUR);
}

/** Adds an event at `instant` to a contact's histogram of local hours of the week. */
export function countEvent(histogram: Uint32Array, clock: ZoneClock, instant: number, at = 0): void {
  histogram[at + hourOfWeek(clock.wall(instant))]++;
}

interface Slot {
  due: number;
  week: number;
  day: number;
}

/**
 * The local hours the window covers, in order: the hour it opens in (due at its start) and
 * the next 23 or so (due at theirs), each with its hour of the week and of the day. The same
 * for every contact of a zone: the plan of a page computes them once per zone.
 */
export function windowSlots(clock: ZoneClock, windowStart: number): Slot[] {
  const end = windowStart + WINDOW_MS;
  const first = Math.floor(clock.wall(windowStart) / HOUR) * HOUR;
  const slots: Slot[] = [];
  for (let k = 0; k <= 25; k++) {
    const wall = first + k * HOUR;
    const at = clock.instantOf(wall);
    if (at === undefined) continue; // an hour a spring-forward skips
    // The hour the window opens in starts before it (or, falling back, the same wall hour twice).
    if (at + HOUR <= windowStart) continue;
    const due = Math.max(at, windowStart);
    if (due >= end) break;
    const week = hourOfWeek(wall);
    slots.push({ due, week, day: week % 24 });
  }
  return slots;
}

const byDay = new Uint32Array(24);

/**
 * The plan of one contact from its histogram (see the module's comment): the 168 counters
 * from `at` in `counts` (a page's contacts share one array), `events` their sum.
 */
export function planFromHistogram(counts: Uint32Array, slots: Slot[], at = 0, events = sum(counts, at)): BestHourPlan {
  if (events < DAY_MIN_EVENTS || slots.length === 0) return { basis: "none", events };
  if (events >= WEEK_MIN_EVENTS) {
    let best: Slot | undefined;
    for (const s of slots) if (counts[at + s.week] > 0 && (!best || counts[at + s.week] > counts[at + best.week])) best = s;
    if (best) return { dueAt: best.due, basis: "week", events };
  }
  byDay.fill(0);
  for (let i = 0; i < HOURS_OF_WEEK; i++) byDay[i % 24] += counts[at + i];
  let best = slots[0];
  for (const s of slots) if (byDay[s.day] > byDay[best.day]) best = s;
  return { dueAt: best.due, basis: "day", events };
}

function sum(counts: Uint32Array, at: number): number {
  let n = 0;
  for (let i = 0; i < HOURS_OF_WEEK; i++) n += counts[at + i];
  return n;
}

/** The plan of one contact from its events' times (tests, small callers). */
export function planBestHour(eventTimes: Iterable<number>, timeZone: string, windowStart: number, now = windowStart): BestHourPlan {
  const clock = new ZoneClock(timeZone);
  const histogram = new Uint32Array(HOURS_OF_WEEK);
  const since = now - HISTORY_DAYS * DAY;
  for (const at of eventTimes) if (at >= since && at <= now) countEvent(histogram, clock, at);
  return planFromHistogram(histogram, windowSlots(clock, windowStart));
}

/**
 * Counter arrays for pages of contacts, kept for the next page (zeroed as far as used): a page of
 * 1,000 contacts needs 672 KB, which allocating (and zeroing) anew for every page would cost
 * again and again. Pages planned at once each take their own.
 */
const pool: Uint32Array[] = [];
function takeCounts(contacts: number): Uint32Array {
  const size = Math.max(contacts, PLAN_MAX_CONTACTS) * HOURS_OF_WEEK;
  const i = pool.findIndex((a) => a.length >= contacts * HOURS_OF_WEEK);
  return i >= 0 ? pool.splice(i, 1)[0] : new Uint32Array(size);
}
function giveCounts(counts: Uint32Array, usedRows: number): void {
  counts.fill(0, 0, usedRows * HOURS_OF_WEEK);
  if (pool.length < 4) pool.push(counts);
}

/** Opens and clicks of contacts since a time (the engagement store). */
export interface EngagementTimes {
  engagedTimes(workspaceId: string, contactIds: readonly string[], since: Date, each: (contactId: string, at: number) => void): Promise<void>;
}

export interface PlanRequest {
  workspaceId: string;
  windowStart: number;
  /** Contacts without a valid zone of their own: the workspace's. */
  defaultTimeZone: string;
  contacts: { id: string; timeZone?: string }[];
  now: number;
}

/** Most contacts per PlanBestHours call. */
export const PLAN_MAX_CONTACTS = 5_000;

/**
 * The plans of a page of contacts, in their order: one read of their opens and clicks of the
 * last HISTORY_DAYS (a histogram of 168 counters per contact of the page, nothing else kept),
 * a zone's clock and window hours shared by its contacts (and by later pages, through `zones`).
 */
export async function planBestHours(source: EngagementTimes, req: PlanRequest, zones = new Map<string, { clock: ZoneClock; slots?: Slot[]; windowStart?: number }>()): Promise<BestHourPlan[]> {
  // Keyed by the zone as given (validity is checked once per name, not per contact).
  const zoneOf = (tz: string | undefined) => {
    const given = tz || "";
    let z = zones.get(given);
    if (!z) {
      const name = given && knownZone(given) ? given : knownZone(req.defaultTimeZone) ? req.defaultTimeZone : "UTC";
      zones.set(given, (z = { clock: clockOf(name) }));
    }
    if (z.windowStart !== req.windowStart) {
      z.slots = windowSlots(z.clock, req.windowStart);
      z.windowStart = req.windowStart;
    }
    return z;
  };
  // 168 counters per contact of the page that has events (rows of a pooled array), and their sums.
  const rows = new Map<string, { row: number; clock: ZoneClock; events: number }>();
  for (const c of req.contacts) if (!rows.has(c.id)) rows.set(c.id, { row: -1, clock: zoneOf(c.timeZone).clock, events: 0 });
  const counts = takeCounts(rows.size);
  let used = 0;
  try {
    const since = req.now - HISTORY_DAYS * DAY;
    await source.engagedTimes(req.workspaceId, [...rows.keys()], new Date(since), (contactId, at) => {
      const entry = rows.get(contactId);
      if (!entry || at > req.now) return;
      if (entry.row < 0) entry.row = used++;
      countEvent(counts, entry.clock, at, entry.row * HOURS_OF_WEEK);
      entry.events++;
    });
    return req.contacts.map((c) => {
      const entry = rows.get(c.id)!;
      if (entry.events < DAY_MIN_EVENTS) return { basis: "none" as const, events: entry.events };
      return planFromHistogram(counts, zoneOf(c.timeZone).slots!, entry.row * HOURS_OF_WEEK, entry.events);
    });
  } finally {
    giveCounts(counts, used);
  }
}
