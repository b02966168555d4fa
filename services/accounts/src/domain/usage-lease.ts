/**
 * Sends a busy workspace reserved ahead in its month's counter and hands out from memory,
 * so most reservations cost no store write (the write is a commit with fsync, the largest
 * part of a transactional send's round trip when every round wrote it).
 *
 * The units taken ahead are in the durable counter, so no process can ever grant past the
 * limit; the lease only decides who spends them. Its size follows the workspace's demand
 * (the units asked in the last `WINDOW_MS`) and stays small against the headroom, so near
 * the limit reservations go straight to the counter and stay exact. Units not spent within
 * `IDLE_MS` go back, and all go back at shutdown; a crash keeps at most one lease counted,
 * which only ever errs on the strict side (`MAX_AHEAD`, a tenth of the headroom).
 */

/** Demand is measured over this window, and a lease covers about one window of it. */
export const WINDOW_MS = 250;
/** Units not spent for this long are given back. */
export const IDLE_MS = 1_000;
/** Most units taken ahead at once. */
export const MAX_AHEAD = 500;
/** Fewer than this ahead is not worth a lease (a quiet workspace reserves as it goes). */
const MIN_AHEAD = 8;
/** Units ahead are at most this share of the headroom left after the request. */
const HEADROOM_SHARE = 0.1;

export interface Lease {
  period: string;
  /** Units reserved in the counter and not yet handed out. */
  remaining: number;
  /** The counter after the latest reservation this lease came from. */
  counterAfter: number;
  lastUsedAt: number;
}

interface Demand {
  windowStart: number;
  units: number;
  previousUnits: number;
}

export class UsageLeases {
  private readonly leases = new Map<string, Lease>();
  private readonly demand = new Map<string, Demand>();

  /** Counts a request's units toward the workspace's demand. */
  noteDemand(workspaceId: string, units: number, now: number): void {
    let d = this.demand.get(workspaceId);
    if (!d || now - d.windowStart >= 2 * WINDOW_MS) {
      d = { windowStart: now, units: 0, previousUnits: 0 };
      this.demand.set(workspaceId, d);
    } else if (now - d.windowStart >= WINDOW_MS) {
      d.previousUnits = d.units;
      d.units = 0;
      d.windowStart = now;
    }
    d.units += units;
  }

  /**
   * Units to reserve ahead of `count`: about one window of the workspace's demand, none
   * while the counter's level is unknown or the headroom is small.
   */
  aheadOf(workspaceId: string, count: number, limit: number, period: string): number {
    const lease = this.current(workspaceId, period);
    if (!lease) return 0;
    const demand = this.demand.get(workspaceId);
    const recent = Math.max(demand?.previousUnits ?? 0, demand?.units ?? 0);
    const headroom = limit - lease.counterAfter - count;
    const ahead = Math.min(MAX_AHEAD, recent, Math.floor(headroom * HEADROOM_SHARE));
    return ahead >= MIN_AHEAD ? ahead : 0;
  }

  /**
   * Hands `count` units out of the lease when it holds them and the workspace's consumption
   * stays within `limit` (a limit lowered meanwhile is respected). The counter value the
   * workspace has consumed up to, or undefined when the lease cannot serve.
   */
  take(workspaceId: string, count: number, limit: number, period: string, now: number): number | undefined {
    const lease = this.current(workspaceId, period);
    if (!lease || lease.remaining < count) return undefined;
    const consumed = lease.counterAfter - lease.remaining + count;
    if (consumed > limit) return undefined;
    lease.remaining -= count;
    lease.lastUsedAt = now;
    return consumed;
  }

  /** Takes whatever the lease holds (fewer than a request needs), to be topped up from the counter. */
  drain(workspaceId: string, period: string): number {
    const lease = this.current(workspaceId, period);
    if (!lease) return 0;
    const units = lease.remaining;
    lease.remaining = 0;
    return units;
  }

  /**
   * Records a reservation in the counter: `counterAfter` is the counter after it and `ahead`
   * the units it took beyond the request. Concurrent reservations add up.
   */
  record(workspaceId: string, period: string, counterAfter: number, ahead: number, now: number): Lease | undefined {
    const lease = this.leases.get(workspaceId);
    if (lease && lease.period === period) {
      lease.remaining += ahead;
      lease.counterAfter = Math.max(lease.counterAfter, counterAfter);
      lease.lastUsedAt = now;
      return undefined;
    }
    this.leases.set(workspaceId, { period, remaining: ahead, counterAfter, lastUsedAt: now });
    // A lease of the month before: the caller gives its units back.
    return lease && lease.remaining > 0 ? lease : undefined;
  }

  /** Returns units drained from the lease that the request could not use after all. */
  putBack(workspaceId: string, period: string, units: number): boolean {
    const lease = this.current(workspaceId, period);
    if (lease) lease.remaining += units;
    return lease !== undefined;
  }

  /** Units this process holds unspent in the workspace's counter for `period`. */
  unspent(workspaceId: string, period: string): number {
    const lease = this.leases.get(workspaceId);
    return lease && lease.period === period ? lease.remaining : 0;
  }

  /**
   * Removes and returns the leases to give back: those of another period than `period`
   * (the month turned), those idle since `IDLE_MS`, or all of them.
   */
  takeBack(opts: { now: number; period: string; all?: boolean }): { workspaceId: string; period: string; units: number }[] {
    const back: { workspaceId: string; period: string; units: number }[] = [];
    for (const [workspaceId, lease] of this.leases) {
      const stale = lease.period !== opts.period || opts.now - lease.lastUsedAt >= IDLE_MS;
      if (!opts.all && !stale) continue;
      this.leases.delete(workspaceId);
      if (lease.remaining > 0) back.push({ workspaceId, period: lease.period, units: lease.remaining });
    }
    for (const [workspaceId, d] of this.demand) if (opts.all || opts.now - d.windowStart >= 2 * WINDOW_MS) this.demand.delete(workspaceId);
    return back;
  }

  get size(): number {
    return this.leases.size;
  }

  /** The workspace's lease for `period`; a lease of another period is left for takeBack. */
  private current(workspaceId: string, period: string): Lease | undefined {
    const lease = this.leases.get(workspaceId);
    return lease && lease.period === period ? lease : undefined;
  }
}
