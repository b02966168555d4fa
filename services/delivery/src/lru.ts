/**
 * A small LRU bounded by the total weight of its values (e.g. bytes of text), so a few
 * 500 KB broadcasts and many small transactional messages share one budget.
 */
export class WeightedLru<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private total = 0;

  constructor(private readonly maxWeight: number) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit); // most recently used goes last
    return hit.value;
  }

  set(key: string, value: V, weight: number): void {
    const old = this.entries.get(key);
    if (old) {
      this.total -= old.weight;
      this.entries.delete(key);
    }
    if (weight > this.maxWeight) return; // would evict everything else for one entry
    this.entries.set(key, { value, weight });
    this.total += weight;
    for (const [k, e] of this.entries) {
      if (this.total <= this.maxWeight) break;
      this.entries.delete(k);
      this.total -= e.weight;
    }
  }

  get size(): number {
    return this.entries.size;
  }

  get weight(): number {
    return this.total;
  }
}
