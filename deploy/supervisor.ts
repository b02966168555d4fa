/**
 * Restart policy of the launcher (`npm start`), as a process manager applies it: a unit
 * that dies is restarted after a delay that doubles from `initialDelayMs` to `maxDelayMs`,
 * back to the start once it has stayed up `resetAfterMs`; `maxCrashes` crashes within
 * `windowMs` mean it cannot run here, and the launcher gives up.
 */
export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  resetAfterMs: number;
  maxCrashes: number;
  windowMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  resetAfterMs: 30_000,
  maxCrashes: 5,
  windowMs: 60_000,
};

export type RestartDecision = { giveUp: false; delayMs: number } | { giveUp: true; crashes: number };

/** The crash history of one supervised process. */
export class RestartTracker {
  private crashes: number[] = [];
  private consecutive = 0;
  private startedAt = 0;

  constructor(private readonly policy: RestartPolicy = DEFAULT_RESTART_POLICY) {}

  started(now = Date.now()): void {
    this.startedAt = now;
  }

  crashed(now = Date.now()): RestartDecision {
    if (now - this.startedAt >= this.policy.resetAfterMs) this.consecutive = 0;
    this.consecutive++;
    this.crashes = [...this.crashes.filter((t) => now - t < this.policy.windowMs), now];
    if (this.crashes.length >= this.policy.maxCrashes) return { giveUp: true, crashes: this.crashes.length };
    const delayMs = Math.min(this.policy.initialDelayMs * 2 ** (this.consecutive - 1), this.policy.maxDelayMs);
    return { giveUp: false, delayMs };
  }
}

/** "exit code 1" / "signal SIGKILL", for messages. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/** Sends a signal to a process group (detached children lead their own); false when gone. */
export function signalGroup(pid: number | undefined, signal: NodeJS.Signals): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    try {
      process.kill(pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}
