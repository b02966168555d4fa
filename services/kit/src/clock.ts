/** The units' one clock: what their domains take as `clock`; tests pass a manual one instead. */
export interface Clock {
  now(): Date;
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => new Date() };
