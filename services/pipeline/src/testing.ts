/**
 * The content store in memory, for the units' tests: what was put under each workspace and
 * content ref, a log of puts and deletes (shared with a fake queue, so a test reads the
 * order of writes and publishes), and failures or delays on demand.
 */
export class MemoryContentStore<T> {
  entries = new Map<string, T>();
  /** The next this many puts throw, as an unreachable store would. */
  failNext = 0;
  /** Delay of each put, so a put can still be running when a job would go out. */
  delayMs = 0;

  constructor(readonly log: string[] = []) {}

  async put(workspaceId: string, contentRef: string, compiled: T): Promise<void> {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("content store unavailable");
    }
    this.entries.set(`${workspaceId} ${contentRef}`, compiled);
    this.log.push(`put ${contentRef}`);
  }

  async delete(workspaceId: string, contentRef: string): Promise<void> {
    this.entries.delete(`${workspaceId} ${contentRef}`);
    this.log.push(`delete ${contentRef}`);
  }

  get(workspaceId: string, contentRef: string): T | undefined {
    return this.entries.get(`${workspaceId} ${contentRef}`);
  }
}
