/**
 * Group commit: writes requested by concurrent jobs while a flush is running are
 * gathered and written together by the next flush (one insertMany instead of N
 * insertOne calls). Each caller still awaits its own write, so nothing is acknowledged
 * before it is stored; under light load a batch is just one item.
 */
export class GroupCommit<T, R> {
  private queue: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private running = false;

  constructor(
    /** Writes a batch; returns one result per item, in order. */
    private readonly flush: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 256,
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.flush(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i]));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
