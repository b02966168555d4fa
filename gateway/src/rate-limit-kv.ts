import { createHash } from "node:crypto";
import type { KV, KvEntry } from "@nats-io/kv";
import { openKvBucket } from "../../services/kit/src/jetstream.js";
import type { NatsConnection } from "@nats-io/transport-node";
import { takeFromBucket, type BucketState } from "../../services/kit/src/token-bucket.js";
import type { BucketTake, TokenBuckets } from "./rate-limit.js";

export const RATE_LIMIT_BUCKET = "mailroom_gateway_rate_limit";

/**
 * Per-key token buckets shared by every gateway process through JetStream KV: one entry
 * per API key, `{ tokens, at }`, updated by compare-and-set on its revision (a lost race
 * reads again). Entries untouched for `idleMs` expire, which is a full bucket anyway.
 *
 * Concurrent requests of one key in this process are coalesced: while one compare-and-set
 * for the key is in flight, the requests that arrive wait and then take their tokens
 * together in the next one. So the races left are only between gateway processes, and a
 * busy key never fails for contention while its bucket still holds tokens.
 */
export class KvTokenBuckets implements TokenBuckets {
  private readonly pending = new Map<string, { waiters: Waiter[]; running: boolean }>();

  private constructor(
    private readonly kv: KV,
    private readonly now: () => number,
  ) {}

  static async open(nc: NatsConnection, opts: { bucket?: string; idleMs: number; now?: () => number }): Promise<KvTokenBuckets> {
    const kv = await openKvBucket(nc, opts.bucket ?? RATE_LIMIT_BUCKET, { history: 1, ttl: opts.idleMs });
    return new KvTokenBuckets(kv, opts.now ?? Date.now);
  }

  take(key: string, rate: number, burst: number): Promise<BucketTake> {
    // Key ids are opaque: a digest is always a valid KV key and reveals nothing.
    const kvKey = `key.${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
    let queue = this.pending.get(kvKey);
    if (!queue) this.pending.set(kvKey, (queue = { waiters: [], running: false }));
    const result = new Promise<BucketTake>((resolve, reject) => queue.waiters.push({ resolve, reject }));
    if (!queue.running) void this.drain(kvKey, queue, rate, burst);
    return result;
  }

  /** Serves the key's waiting requests, a batch per compare-and-set, until none is left. */
  private async drain(kvKey: string, queue: { waiters: Waiter[]; running: boolean }, rate: number, burst: number): Promise<void> {
    queue.running = true;
    try {
      while (queue.waiters.length) {
        const batch = queue.waiters.splice(0);
        try {
          const taken = await this.takeMany(kvKey, rate, burst, batch.length);
          batch.forEach((w, i) =>
            w.resolve(i < taken.granted ? { granted: true, tokens: taken.tokens, waitMs: 0 } : { granted: false, tokens: taken.tokens, waitMs: taken.waitMs }),
          );
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      queue.running = false;
      this.pending.delete(kvKey);
    }
  }

  private async takeMany(kvKey: string, rate: number, burst: number, want: number): Promise<{ granted: number; tokens: number; waitMs: number }> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const entry = await this.kv.get(kvKey);
      const prev = entry && entry.operation === "PUT" ? parseBucket(entry) : undefined;
      const take = takeFromBucket(prev, rate, burst, want, this.now());
      if (take.granted === 0) return { granted: 0, tokens: take.state.tokens, waitMs: take.waitMs };
      const body = JSON.stringify(take.state);
      try {
        if (entry) await this.kv.update(kvKey, body, entry.revision);
        else await this.kv.create(kvKey, body);
        // Whoever was not granted waits for the next whole token.
        const waitMs = Math.max(1, Math.ceil(((1 - (take.state.tokens % 1)) / rate) * 1000));
        return { granted: take.granted, tokens: take.state.tokens, waitMs };
      } catch {
        // Another gateway process took tokens between our read and write: read again.
        await new Promise((r) => setTimeout(r, Math.random() * 3 * (attempt + 1)));
      }
    }
    // Twenty lost races with other processes on one key is itself a sign of too many requests.
    return { granted: 0, tokens: 0, waitMs: 1_000 };
  }
}

interface Waiter {
  resolve: (take: BucketTake) => void;
  reject: (err: unknown) => void;
}

function parseBucket(e: KvEntry): BucketState | undefined {
  try {
    const s = e.json<BucketState>();
    return Number.isFinite(s.tokens) && Number.isFinite(s.at) ? s : undefined;
  } catch {
    return undefined;
  }
}
