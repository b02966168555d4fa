import type { OutcomeType } from "../../domain/ports.js";

/** One route's counters in this process, for the admin status (Prometheus has the same per domain). */
export interface RouteCounters {
  sent: number;
  deferred: number;
  bounced: number;
  failed: number;
  /** Mean time of the last sends, in milliseconds (0 before the first). */
  latencyMs: number;
}

/** Sends averaged for latencyMs. */
const WINDOW = 100;

/** Per-route outcome counters and a running mean of the last sends' time. */
export class RouteStats {
  private readonly byRoute = new Map<string, RouteCounters & { samples: number }>();

  record(route: string, outcome: OutcomeType, ms: number): void {
    let c = this.byRoute.get(route);
    if (!c) this.byRoute.set(route, (c = { sent: 0, deferred: 0, bounced: 0, failed: 0, latencyMs: 0, samples: 0 }));
    c[outcome] += 1;
    // An exponential mean over about the last WINDOW sends: no buffer per route.
    c.samples = Math.min(c.samples + 1, WINDOW);
    c.latencyMs += (ms - c.latencyMs) / c.samples;
  }

  of(route: string): RouteCounters {
    const c = this.byRoute.get(route);
    return c ? { sent: c.sent, deferred: c.deferred, bounced: c.bounced, failed: c.failed, latencyMs: c.latencyMs } : { sent: 0, deferred: 0, bounced: 0, failed: 0, latencyMs: 0 };
  }
}
