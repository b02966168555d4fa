/**
 * Durations and wall-clock waits (DESIGN §9.6). Pure and clock-free: the caller passes `now`.
 */
import type { Weekday } from "./model.js";

/** An ISO 8601 duration (P1DT2H, PT2S, P1W, P1M = 30 days?) in milliseconds; undefined when malformed or under 1 s. */
export declare function durationMs(iso: string): number | undefined;

/**
 * The first instant after `now` whose wall-clock time in `timeZone` (IANA) is `time` (HH:MM)
 * on one of `days` (all when empty), DST-correct: a time that does not exist that day (spring
 * forward) is the first valid minute after it; a time that exists twice (fall back) is its
 * first occurrence.
 */
export declare function nextWallClock(now: Date, time: string, days: readonly Weekday[] | undefined, timeZone: string): Date;

/** True when `timeZone` is an IANA zone this runtime knows. */
export declare function isTimeZone(timeZone: string): boolean;
