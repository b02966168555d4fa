import { SmtpFailure } from "../../domain/ports.js";

/**
 * Messages per second to one destination domain, spaced evenly: each send takes the next
 * free slot and waits for it, up to `maxWaitMs`; past that it is deferred (a temporary
 * failure, before anything was sent) rather than held.
 */
export class DomainRate {
  private next = 0;

  constructor(
    private readonly perSecond: number,
    private readonly maxWaitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async take(domain: string): Promise<void> {
    if (this.perSecond <= 0) return;
    const now = this.now();
    const slot = Math.max(now, this.next);
    const waitMs = slot - now;
    if (waitMs > this.maxWaitMs) {
      throw new SmtpFailure(`4.4.5 over the rate of ${this.perSecond} messages/s to ${domain}: deferred`, 0, false, true);
    }
    this.next = slot + 1000 / this.perSecond;
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
