import { badRequest } from "../../../kit/src/errors.js";
import { scopedId } from "./model.js";
import type { UsageRepository } from "./ports.js";
import type { Workspaces } from "./workspaces.js";
import { systemClock, type Clock } from "./validation.js";

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
 * can never take the counter past the limit.
 */
export class Usage {
  constructor(
    private readonly repo: UsageRepository,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  async reserve(workspaceId: string, countInput: number): Promise<UsageResult> {
    const count = checkCount(countInput);
    const ws = await this.workspaces.get(workspaceId);
    const period = periodOf(this.now());
    const id = scopedId(workspaceId, period);
    const limit = ws.monthlyLimit;
    if (count <= limit) {
      // The counter exists after the period's first send, so the CAS comes first: creating
      // it on every call was a second write transaction (and commit) per reservation.
      let after = await this.repo.reserve(id, count, limit);
      if (!after && !(await this.repo.find(id))) {
        await this.repo.ensure({ _id: id, workspaceId, period, used: 0 });
        after = await this.repo.reserve(id, count, limit);
      }
      if (after) return { granted: true, used: after.used, limit, period };
    }
    const current = await this.repo.find(id);
    return { granted: false, used: current?.used ?? 0, limit, period };
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
    const used = doc?.used ?? 0;
    return { granted: used < ws.monthlyLimit, used, limit: ws.monthlyLimit, period };
  }
}
