/**
 * Wall-clock waits (DESIGN §9.6). Pure and clock-free: the caller passes `now`. Time zones go
 * through kit's time-zones.ts (Intl.DateTimeFormat alone, the runtime's tz database), as the
 * broadcast unit's SMART pacing does: no date library for two functions. Durations are kit's
 * durations.ts, shared with the broadcast unit's A/B waits.
 */
import { instantOf, wallAt } from "@mailroom/kit/time-zones.js";
import { WEEKDAYS, type Weekday } from "./model.js";

export { isTimeZone } from "@mailroom/kit/time-zones.js";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

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
