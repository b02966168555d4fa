/**
 * ISO 8601 durations as waits take them: automation waits, timeouts and reentry delays
 * (DESIGN §9.6) and an A/B test's `waitFor` (§10.5). One parser, so "PT2H" means the same
 * wherever a wait is given. Pure.
 */

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
 * Why `iso` is no acceptable duration for a wait, or its length. Years and months are
 * refused: their length depends on the calendar, and a wait must mean the same thing
 * whenever it starts.
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
