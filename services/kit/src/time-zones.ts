/**
 * Wall clocks in IANA time zones through Intl.DateTimeFormat alone (the runtime's tz
 * database): what a clock in a zone reads at an instant, and back. Shared by the broadcast
 * unit's SMART pacing and the automation unit's wait_until (nextWallClock). Pure.
 *
 * A wall-clock reading is kept as the milliseconds of a UTC date with the same fields, so
 * arithmetic on it is plain (a day later is + 86,400,000).
 */
export type Wall = number;

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * True when `timeZone` is an IANA zone this runtime knows. An offset ("+02:00") is no zone: it
 * knows no daylight saving time, and Node 24's Intl takes one where Node 20's refused it, so it
 * is refused here on every version.
 */
export function isTimeZone(timeZone: string): boolean {
  if (!timeZone || timeZone.length > 64 || /^[+\-\u2212]/.test(timeZone)) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** What a clock in `timeZone` reads at `instant` (epoch ms), to the second. */
export function wallAt(instant: number, timeZone: string): Wall {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timeZone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(instant)) if (part.type !== "literal") p[part.type] = Number(part.value);
  // Years before 1 AD never occur here; era parts are ignored.
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
}

/** The zone's offset at `instant` (wall minus UTC), to the second. */
const offsetAt = (instant: number, timeZone: string) => wallAt(instant, timeZone) - Math.floor(instant / SECOND) * SECOND;

/**
 * The instant whose wall clock in `timeZone` reads `wall`. A reading that occurs twice (fall
 * back) gives the first; one that never occurs (spring forward) gives the end of the gap, the
 * first valid minute after it. Offsets change at most once within a day and a half either side
 * in every real zone, so the offsets 36 h before and after are the only candidates.
 */
export function instantOf(wall: Wall, timeZone: string): number {
  const before = offsetAt(wall - 36 * HOUR, timeZone);
  const after = offsetAt(wall + 36 * HOUR, timeZone);
  const readsWall = (t: number) => wallAt(t, timeZone) === wall;
  const candidates = [wall - before, wall - after].filter(readsWall).sort((a, b) => a - b);
  if (candidates.length) return candidates[0];
  if (before === after) return wall - before;
  // A gap: `wall` falls between the last instant on the old offset and the first on the new.
  // Find that transition to the minute (wall - after is before it, wall - before after it).
  let lo = Math.floor((wall - after) / MINUTE);
  let hi = Math.ceil((wall - before) / MINUTE);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(mid * MINUTE, timeZone) === after) hi = mid;
    else lo = mid;
  }
  return hi * MINUTE;
}

/** Days of the week by name, Monday first (an automation's wait_until days). */
export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const DAY = 24 * HOUR;

/** "HH:MM", 00:00 to 23:59. */
export const TIME_OF_DAY = /^(?:[01]\d|2[0-3]):[0-5]\d$/;

/**
 * The first instant after `now` whose wall-clock time in `timeZone` (IANA) is `time` (HH:MM)
 * on one of `days` (all when empty), DST-correct: a time that does not exist that day (spring
 * forward) is the first valid minute after it; a time that exists twice (fall back) is its
 * first occurrence, and that day's only one (a run waiting from between the two goes to the
 * next day, not to the repeat an hour later).
 */
export function nextWallClock(now: Date, time: string, days: readonly Weekday[] | undefined, timeZone: string): Date {
  const m = /^(\d{2}):(\d{2})$/.exec(time);
  if (!m || !TIME_OF_DAY.test(time)) throw new RangeError(`time "${time}" is not HH:MM`);
  const minutes = Number(m[1]) * 60 + Number(m[2]);
  const allowed = days?.length ? new Set(days) : undefined;
  const nowMs = now.getTime();
  const today = Math.floor(wallAt(nowMs, timeZone) / DAY) * DAY;
  // Today up to a week on: the same weekday next week is the furthest a match can be.
  for (let d = 0; d <= 8; d++) {
    const date = today + d * DAY;
    // getUTCDay: 0 = Sunday; WEEKDAYS start on Monday.
    if (allowed && !allowed.has(WEEKDAYS[(new Date(date).getUTCDay() + 6) % 7])) continue;
    const at = instantOf(date + minutes * MINUTE, timeZone);
    if (at > nowMs) return new Date(at);
  }
  throw new RangeError(`no ${time} in ${timeZone} within 8 days of ${now.toISOString()}`);
}
