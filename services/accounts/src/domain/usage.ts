import { badRequest } from "@mailroom/kit/errors.js";
import { scopedId } from "@mailroom/records/model.js";
import type { UsageRepository } from "@mailroom/records/ports.js";
import { assertMaySend, type Workspaces } from "./workspaces.js";
import { systemClock, type Clock } from "@mailroom/records/validation.js";
import { IDLE_MS, UsageLeases } from "./usage-lease.js";

export interface UsageResult {
  granted: boolean;
  used: number;
  limit: number;
  period: string;
}

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;

/** Calendar month in UTC, "YYYY-MM". */
export const periodOf = (d: Date): string => d.toISOString().slice(0, 7);

function checkCount(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1 || count > 1_000_000) throw badRequest("invalid_request", "count must be an integer between 1 and 1000000");
  return count;
}

/**
 * Monthly sending usage. A reservation is one compare-and-set on the month's counter
 * (UsageRepository.reserve), so concurrent reservations, from any number of processes,
 * can never take the counter past the limit. A busy workspace reserves ahead and is served
 * from memory meanwhile (usage-lease.ts); `close()` gives what is left back.
 */
export class Usage {
  private readonly leases = new UsageLeases();
  private sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly repo: UsageRepository,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  async reserve(workspaceId: string, countInput: number): Promise<UsageResult> {
    const count = checkCount(countInput);
    const ws = await this.workspaces.get(workspaceId);
    // An operator's pause or ban refuses every send (emails, batches, broadcast windows) here.
    assertMaySend(ws);
    const at = this.now();
    const now = at.getTime();
    const period = periodOf(at);
    const id = scopedId(workspaceId, period);
    const limit = ws.monthlyLimit;
    this.leases.noteDemand(workspaceId, count, now);
    const consumed = this.leases.take(workspaceId, count, limit, period, now);
    if (consumed !== undefined) return { granted: true, used: consumed, limit, period };
    if (count <= limit) {
      const ahead = this.leases.aheadOf(workspaceId, count, limit, period);
      let after = await this.counterReserve(id, workspaceId, period, count + ahead, limit);
      if (after) return this.granted(workspaceId, period, after.used, ahead, limit);
      if (ahead) {
        after = await this.counterReserve(id, workspaceId, period, count, limit);
        if (after) return this.granted(workspaceId, period, after.used, 0, limit);
      }
      // The counter is full, but units this process leased may still cover the request.
      const held = this.leases.drain(workspaceId, period);
      if (held > 0 && held < count) {
        after = await this.repo.reserve(id, count - held, limit);
        if (after) return this.granted(workspaceId, period, after.used, 0, limit);
      }
      if (held > 0 && !this.leases.putBack(workspaceId, period, held)) this.giveBack(workspaceId, period, held);
    }
    const current = await this.repo.find(id);
    const used = Math.max(0, (current?.used ?? 0) - this.leases.unspent(workspaceId, period));
    return { granted: false, used, limit, period };
  }

  /** The counter after adding `count` within `limit`, created at zero first if the month has none. */
  private async counterReserve(id: string, workspaceId: string, period: string, count: number, limit: number) {
    // The counter exists after the period's first send, so the CAS comes first: creating
    // it on every call was a second write transaction (and commit) per reservation.
    let after = await this.repo.reserve(id, count, limit);
    if (!after && !(await this.repo.find(id))) {
      await this.repo.ensure({ _id: id, workspaceId, period, used: 0 });
      after = await this.repo.reserve(id, count, limit);
    }
    return after;
  }

  private granted(workspaceId: string, period: string, counterAfter: number, ahead: number, limit: number): UsageResult {
    const now = this.now().getTime();
    const previous = this.leases.record(workspaceId, period, counterAfter, ahead, now);
    if (previous) this.giveBack(workspaceId, previous.period, previous.remaining);
    this.sweepWhileLeased();
    return { granted: true, used: counterAfter - this.leases.unspent(workspaceId, period), limit, period };
  }

  /** Gives leased units back to their month's counter (best effort: a lost give-back only errs on the strict side). */
  private giveBack(workspaceId: string, period: string, units: number): Promise<void> {
    return this.repo.release(scopedId(workspaceId, period), units).catch(() => undefined);
  }

  private sweepWhileLeased(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => {
      const at = this.now();
      for (const back of this.leases.takeBack({ now: at.getTime(), period: periodOf(at) })) void this.giveBack(back.workspaceId, back.period, back.units);
      if (this.leases.size === 0) this.stopSweeping();
    }, IDLE_MS / 2);
    this.sweeper.unref();
  }

  private stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Gives every unspent leased unit back (at shutdown). */
  async close(): Promise<void> {
    this.stopSweeping();
    const at = this.now();
    await Promise.all(this.leases.takeBack({ now: at.getTime(), period: periodOf(at), all: true }).map((b) => this.giveBack(b.workspaceId, b.period, b.units)));
  }

  /** Gives back a reservation that was not used (never below zero). */
  async release(workspaceId: string, countInput: number, period: string): Promise<void> {
    const count = checkCount(countInput);
    const p = period || periodOf(this.now());
    if (!PERIOD.test(p)) throw badRequest("invalid_request", `period "${period}" is not YYYY-MM`);
    await this.repo.release(scopedId(workspaceId, p), count);
  }

  async get(workspaceId: string): Promise<UsageResult> {
    const ws = await this.workspaces.get(workspaceId);
    const period = periodOf(this.now());
    const doc = await this.repo.find(scopedId(workspaceId, period));
    // Units leased ahead are not used yet.
    const used = Math.max(0, (doc?.used ?? 0) - this.leases.unspent(workspaceId, period));
    return { granted: used < ws.monthlyLimit, used, limit: ws.monthlyLimit, period };
  }
}
