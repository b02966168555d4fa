/**
 * Retry schedule after a failed attempt, in units of the configured base (5 s by default):
 * 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 6 h, 7 h, 8 h — 12 attempts over about
 * 28.7 h. Each delay gets ±10 % jitter so endpoints that failed together do not retry in
 * lockstep; even the shortest draw spans more than 24 h.
 */
export const RETRY_STEPS = [1, 6, 24, 120, 360, 720, 1440, 2880, 4320, 5040, 5760];
export const JITTER = 0.1;

/** The delay before retry number `step + 1` (step = failures so far − 1), or undefined when the schedule is spent. */
export function retryDelayMs(step: number, baseMs: number, random: () => number = Math.random): number | undefined {
  const units = RETRY_STEPS[step];
  if (units === undefined) return undefined;
  const jitter = 1 + JITTER * (2 * random() - 1);
  return Math.round(units * baseMs * jitter);
}

/** Total time the schedule spans without jitter. */
export function scheduleSpanMs(baseMs: number): number {
  return RETRY_STEPS.reduce((sum, units) => sum + units * baseMs, 0);
}
