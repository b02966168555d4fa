import type { StoredEmail } from "./model.js";
import type { Clock, ContentWriter, DeliveryQueue, EmailStore, Logger, ReleaseScope } from "./ports.js";
import { Publisher } from "./dispatch.js";

/** Publishes in flight at once while the scheduler drains due emails. */
const PUBLISH_AT_ONCE = 64;

export interface SchedulerOptions {
  /** Name of this process in claims; unique per process. */
  owner: string;
  /** How often to look for due emails when the last look found none. */
  intervalMs?: number;
  /** How long a claim holds before another process may take the email over. */
  leaseMs?: number;
  /** Most emails released in one tick, so one tick never runs unbounded. */
  maxPerTick?: number;
  /** Wraps each email's release (its trace, linked to the creating request); default: none. */
  releaseScope?: ReleaseScope;
}

const unscoped: ReleaseScope = (_email, release) => release();

/**
 * Releases due emails: scheduled ones whose time came, and immediate ones whose
 * publisher died or failed before the job was queued. Each one's compiled content is
 * written to the content store (from the email store) just before its job. State lives in the store, so it
 * survives restarts; each email is claimed with a compare-and-set, so with several
 * email-service processes exactly one publishes it.
 */
export class Scheduler {
  private readonly publisher: Publisher;
  private readonly intervalMs: number;
  private readonly leaseMs: number;
  private readonly maxPerTick: number;
  private readonly releaseScope: ReleaseScope;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly emails: EmailStore,
    queue: DeliveryQueue,
    content: ContentWriter,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly opts: SchedulerOptions,
  ) {
    this.publisher = new Publisher(emails, queue, content, clock, opts.owner, logger);
    this.intervalMs = opts.intervalMs ?? 500;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.maxPerTick = opts.maxPerTick ?? 500;
    this.releaseScope = opts.releaseScope ?? unscoped;
  }

  /**
   * Claims and publishes due emails until none is left (or the tick's cap): claims one by
   * one (each a compare-and-set), publishes up to PUBLISH_AT_ONCE at a time. Publishing one
   * by one drained an outbox at one JetStream round trip per email: after a NATS failover
   * that had refused thousands of publishes, 3,000 emails took ~50 s to go out again.
   */
  async tick(): Promise<number> {
    let published = 0;
    let claimed = 0;
    while (claimed < this.maxPerTick && !this.stopped) {
      const batch: StoredEmail[] = [];
      while (batch.length < PUBLISH_AT_ONCE && claimed < this.maxPerTick && !this.stopped) {
        const now = this.clock.now();
        const email = await this.emails.claimDue(now, this.opts.owner, new Date(now.getTime() + this.leaseMs));
        if (!email) break;
        batch.push(email);
        claimed++;
      }
      if (!batch.length) break;
      const results = await Promise.all(batch.map((email) => this.releaseScope(email, () => this.publisher.publish(email))));
      published += results.filter(Boolean).length;
      if (batch.length < PUBLISH_AT_ONCE) break;
    }
    return published;
  }

  start(): void {
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      let published = 0;
      this.running = this.tick()
        .then((n) => void (published = n))
        .catch((err) => this.logger.error({ err }, "scheduler tick failed"));
      await this.running;
      if (this.stopped) return;
      // A full tick means more may be due already: go again at once.
      this.timer = setTimeout(loop, published >= this.maxPerTick ? 0 : this.intervalMs);
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
