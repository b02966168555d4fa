/**
 * Durations and wall-clock waits (DESIGN §9.6). Pure and clock-free: the caller passes `now`.
 * Time zones go through kit's time-zones.ts (Intl.DateTimeFormat alone, the runtime's tz
 * database), as the broadcast unit's SMART pacing does: no date library for two functions.
 */
import { instantOf, wallAt } from "@mailroom/kit/time-zones.js";
import { WEEKDAYS, type Weekday } from "./model.js";

export { isTimeZone } from "@mailroom/kit/time-zones.js";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const MIN_DURATION_MS = SECOND;
/** A wait longer than a year is almost surely a typo (P366W for P36D); a leap year still fits. */
export const MAX_DURATION_MS = 366 * DAY;

// Weeks, days, hours, minutes, seconds; combinable (P1W2DT3H), whole numbers only.
const DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;
const UNIT_MS = [7 * DAY, DAY, HOUR, MINUTE, SECOND];
const WITH_YEARS_OR_MONTHS = /^P(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+S)?)?$/;

/**
 * Why `iso` is no acceptable duration (for a wait, a timeout or a reentry delay), or its
 * length. Years and months are refused: their length depends on the calendar, and a wait
 * must mean the same thing whenever it starts.
 */
export function checkDuration(iso: string): { ms: number } | { error: string } {
  const example = 'an ISO 8601 duration such as "PT30M", "PT2H", "P1D" or "P1W"';
  if (iso.length > 40) return { error: `"${iso.slice(0, 40)}…" is too long for ${example}` };
  const m = DURATION.exec(iso);
  if (!m || iso === "P" || iso.endsWith("T")) {
    if (WITH_YEARS_OR_MONTHS.test(iso) && /^P[^T]*[YM]/.test(iso))
      return { error: `"${iso}" counts years or months, whose length varies: give days or weeks instead (e.g. "P30D")` };
    if (/\d[.,]\d/.test(iso)) return { error: `"${iso}" has a fraction: give whole numbers (e.g. "PT90S" for 1.5 minutes)` };
    return { error: `"${iso}" is not ${example}` };
  }
  const ms = m.slice(1).reduce((sum, n, i) => sum + (n === undefined ? 0 : Number(n) * UNIT_MS[i]), 0);
  if (ms < MIN_DURATION_MS) return { error: `"${iso}" is shorter than 1 second` };
  if (ms > MAX_DURATION_MS) return { error: `"${iso}" is longer than 366 days` };
  return { ms };
}

/**
 * An ISO 8601 duration (PT2S, P1DT2H, P1W) in milliseconds; undefined when malformed, under
 * 1 s or over 366 days. Years and months are refused (see checkDuration).
 */
export function durationMs(iso: string): number | undefined {
  const checked = checkDuration(iso);
  return "ms" in checked ? checked.ms : undefined;
}

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
