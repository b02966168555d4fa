import type { Clock } from "../domain/ports.js";

/** Wall-clock time; tests use a manual clock instead. */
export const systemClock: Clock = { now: () => new Date() };
