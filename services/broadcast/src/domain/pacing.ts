/**
 * Pacing policies (design §6 "delivery methods"): pure functions of the broadcast's
 * state, the clock and the outcomes so far. The release loop asks them how many more
 * recipients may go now and when to look again; everything they read is in the store,
 * so pacing survives a restart of every process.
 */
import type { DeliveryMethod } from "./model.js";
import { instantOf, isTimeZone, wallAt } from "@mailroom/kit/time-zones.js";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export const WAVE_FIRST = 1_000;
export const WAVE_EVERY_MS = 10 * MINUTE;
/** A wave whose bounce rate passes this stops PROGRESSIVE releasing. */
export const WAVE_MAX_BOUNCE_RATE = 0.05;
export const WARMUP_CAPS = [1_000, 1_500, 2_000, 3_000, 5_000, 7_000, 10_000];
export const WARMUP_GROWTH = 1.3;

export interface ReleaseDecision {
  /** How many more recipients may be released now (Infinity: no cap). */
  allowed: number;
  /** When the allowance grows next (absent: it never grows by waiting). */
  nextAt?: Date;
  /** Set when releasing must stop (PROGRESSIVE bounce rate). */
  pause?: string;
}

// ---- PROGRESSIVE: waves of 1k, 2k, 4k … one every 10 minutes --------------------------

/** Recipients released by the end of wave `k` (0-based): 1k, 3k, 7k, … */
export const wavesTotal = (k: number) => (k < 0 ? 0 : WAVE_FIRST * (2 ** (k + 1) - 1));

/** The wave the recipient released `sequence`-th (0-based) belongs to. */
export function waveOf(sequence: number): number {
  let k = 0;
  while (wavesTotal(k) <= sequence) k++;
  return k;
}

/** How many of the first `released` recipients are in wave k. */
export const releasedInWave = (k: number, released: number) =>
  Math.max(0, Math.min(released, wavesTotal(k)) - wavesTotal(k - 1));

export interface ProgressiveInput {
  startedAt: Date;
  now: Date;
  /** Recipients released so far (the global release sequence). */
  released: number;
  /** Bounces per wave: key "w<index>". */
  waveBounces: Record<string, number>;
}

export const waveKey = (k: number) => `w${k}`;

export function progressive(input: ProgressiveInput): ReleaseDecision {
  const { released } = input;
  for (const [key, bounces] of Object.entries(input.waveBounces)) {
    const k = Number(key.slice(1));
    const size = releasedInWave(k, released);
    if (size > 0 && bounces / size > WAVE_MAX_BOUNCE_RATE) return { allowed: 0, pause: "bounce_rate" };
  }
  const elapsed = Math.max(0, input.now.getTime() - input.startedAt.getTime());
  const open = Math.floor(elapsed / WAVE_EVERY_MS);
  return {
    allowed: Math.max(0, wavesTotal(open) - released),
    nextAt: new Date(input.startedAt.getTime() + (open + 1) * WAVE_EVERY_MS),
  };
}

// ---- WARMUP: daily caps per sending account ---------------------------------------------

/** The cap of the `activeDays`-th day (0-based) the account sends on. */
export function warmupCap(activeDays: number): number {
  if (activeDays < WARMUP_CAPS.length) return WARMUP_CAPS[activeDays];
  return Math.floor(WARMUP_CAPS[WARMUP_CAPS.length - 1] * WARMUP_GROWTH ** (activeDays - WARMUP_CAPS.length + 1));
}

/** A workspace's warm-up ledger: days it sent on before `day`, and what it sent on `day`. */
export interface WarmupAccount {
  /** UTC day "YYYY-MM-DD". */
  day: string;
  activeDaysBefore: number;
  sentOnDay: number;
}

export const utcDay = (at: Date) => at.toISOString().slice(0, 10);
const nextUtcDay = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()) + DAY);

/** The account as it stands on `now`'s day (a new day starts from zero). */
export function warmupToday(account: WarmupAccount | undefined, now: Date): WarmupAccount {
  const day = utcDay(now);
  if (!account) return { day, activeDaysBefore: 0, sentOnDay: 0 };
  if (account.day === day) return account;
  return { day, activeDaysBefore: account.activeDaysBefore + (account.sentOnDay > 0 ? 1 : 0), sentOnDay: 0 };
}

export function warmup(account: WarmupAccount | undefined, now: Date): ReleaseDecision {
  const today = warmupToday(account, now);
  return { allowed: Math.max(0, warmupCap(today.activeDaysBefore) - today.sentOnDay), nextAt: nextUtcDay(now) };
}

// ---- SMART: the wall-clock time of sendAt, in each contact's timezone -------------------

/**
 * When a contact gets a SMART broadcast: the wall-clock time sendAt shows in the
 * workspace's timezone, in the contact's own timezone, at the first such moment not
 * before sendAt (so within 24 h). Contacts without a (valid) timezone get it at sendAt.
 */
export function smartDueAt(sendAt: Date, workspaceTimeZone: string, contactTimeZone: string | undefined): Date {
  if (!contactTimeZone || !isTimeZone(contactTimeZone)) return sendAt;
  const wall = wallAt(sendAt.getTime(), isTimeZone(workspaceTimeZone) ? workspaceTimeZone : "UTC");
  const date = Math.floor(wall / DAY) * DAY;
  // The same wall time on the day before, the day itself, and the days after, in order.
  for (const offset of [-1, 0, 1, 2]) {
    // Wall clocks show whole seconds; the fraction is the same in every zone.
    const at = instantOf(wall + offset * DAY, contactTimeZone) + (sendAt.getTime() % 1000);
    if (at >= sendAt.getTime()) return new Date(Math.min(at, sendAt.getTime() + DAY));
  }
  return sendAt;
}

// ---- OPTIMAL: each contact at its own best hour ------------------------------------------

/**
 * When a contact gets an OPTIMAL broadcast: the best hour the audience unit planned from its
 * opens and clicks (within 24 h of sendAt), or, without one (too little history), as SMART.
 * A planned time outside [sendAt, sendAt + 24 h) is not trusted: nobody goes later than that.
 */
export function optimalDueAt(planned: number | undefined, sendAt: Date, workspaceTimeZone: string, contactTimeZone: string | undefined): Date {
  const from = sendAt.getTime();
  if (planned !== undefined && planned >= from && planned < from + DAY) return new Date(planned);
  return smartDueAt(sendAt, workspaceTimeZone, contactTimeZone);
}

// ---- The dispatcher ---------------------------------------------------------------------

export interface PacingInput {
  method: DeliveryMethod;
  startedAt: Date;
  now: Date;
  released: number;
  waveBounces: Record<string, number>;
  warmupAccount?: WarmupAccount;
}

/**
 * How many more recipients may go now. SMART, OPTIMAL and ASAP have no count cap: SMART's and
 * OPTIMAL's timing is in each recipient's dueAt (smartDueAt, optimalDueAt), which the release
 * loop honours.
 */
export function releaseDecision(input: PacingInput): ReleaseDecision {
  switch (input.method) {
    case "ASAP":
    case "SMART":
    case "OPTIMAL":
      return { allowed: Number.POSITIVE_INFINITY };
    case "PROGRESSIVE":
      return progressive(input);
    case "WARMUP":
      return warmup(input.warmupAccount, input.now);
  }
}
