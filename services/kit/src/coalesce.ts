/**
 * Coalesces calls per key while one is in flight: the first call for a key goes out at
 * once (with those made in the same synchronous run); calls that arrive while it runs wait
 * and then go out together in the next one. So
 * an idle system adds no latency, and a busy one makes one round trip per key for as many
 * callers as arrived during the last, instead of one each.
 *
 * `flush(key, items)` answers every item, in order; if it throws, every caller of that
 * round gets the error.
 */
export class Coalescer<T, R> {
  private readonly queues = new Map<string, Waiter<T, R>[]>();

  constructor(
    private readonly flush: (key: string, items: T[]) => Promise<R[]>,
    private readonly maxItems = 1_000,
  ) {}

  run(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const waiter = { item, resolve, reject };
      const queue = this.queues.get(key);
      if (queue) {
        queue.push(waiter);
        return;
      }
      const fresh = [waiter];
      this.queues.set(key, fresh);
      // After the current synchronous work: calls made together (one per item of a batch)
      // go out as one, at no cost in latency.
      queueMicrotask(() => void this.drain(key, fresh));
    });
  }

  /** Serves the key's callers, a round per flush, until none is waiting. */
  private async drain(key: string, queue: Waiter<T, R>[]): Promise<void> {
    try {
      while (queue.length) {
        const round = queue.splice(0, this.maxItems);
        try {
          const answers = await this.flush(
            key,
            round.map((w) => w.item),
          );
          round.forEach((w, i) => w.resolve(answers[i]!));
        } catch (err) {
          for (const w of round) w.reject(err);
        }
      }
    } finally {
      this.queues.delete(key);
    }
  }
}

interface Waiter<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}
