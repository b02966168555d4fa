import { createHash } from "node:crypto";
import type { KV, KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { openKvBucket } from "./jetstream.js";
import { takeFromBucket, type BucketState, type BucketTake, type TokenBuckets } from "./token-bucket.js";
import { Coalescer } from "./coalesce.js";

/**
 * The per-API-key budget's bucket: the gateway (HTTP) and the submission unit (SMTP) take
 * from the same entry, so a key has one budget however it sends.
 */
export const RATE_LIMIT_BUCKET = "mailroom_gateway_rate_limit";

/** How long an idle key's entry is kept: until it would be full again (at least a minute), twice over. */
export const keyBucketIdleMs = (perMinute: number, burst: number) => Math.max(60_000, Math.ceil((burst / perMinute) * 60_000) * 2);

/**
 * Per-key token buckets shared by every process that takes from them (gateways, submission) through JetStream KV: one entry
 * per API key, `{ tokens, at }`, updated by compare-and-set on its revision (a lost race
 * reads again). Entries untouched for `idleMs` expire, which is a full bucket anyway.
 *
 * Concurrent requests of one key in this process are coalesced: while one compare-and-set
 * for the key is in flight, the requests that arrive wait and then take their tokens
 * together in the next one. So the races left are only between gateway processes, and a
 * busy key never fails for contention while its bucket still holds tokens.
 *
 * A busy key whose bucket is far from empty also takes a few tokens ahead (a lease, at most
 * a fifth of a second's worth, kept `LEASE_MS`), so most of its requests cost no round
 * trip at all. Leased tokens are out of the shared bucket, so no process can admit more
 * than the budget; one that goes unused is lost, which only ever errs on the strict side.
 * Near the limit nothing is leased and every request is counted in KV as it comes.
 */
export class KvTokenBuckets implements TokenBuckets {
  private readonly rounds = new Coalescer<{ rate: number; burst: number }, BucketTake>((kvKey, takes) =>
    this.takeRound(kvKey, takes[0]!.rate, takes[0]!.burst, takes.length),
  );
  private readonly leases = new Map<string, Lease>();

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
    const lease = this.leases.get(kvKey);
    if (lease) {
      if (lease.tokens >= 1 && lease.until > this.now()) {
        lease.tokens--;
        return Promise.resolve({ granted: true, tokens: lease.shared + lease.tokens, waitMs: 0 });
      }
      this.leases.delete(kvKey);
    }
    return this.rounds.run(kvKey, { rate, burst });
  }

  /** One compare-and-set for the requests of a key that arrived together; a surplus becomes the lease. */
  private async takeRound(kvKey: string, rate: number, burst: number, want: number): Promise<BucketTake[]> {
    const taken = await this.takeMany(kvKey, rate, burst, want);
    if (taken.granted > want) this.leases.set(kvKey, { tokens: taken.granted - want, shared: taken.tokens, until: this.now() + LEASE_MS });
    return Array.from({ length: want }, (_, i) =>
      i < taken.granted ? { granted: true, tokens: taken.tokens, waitMs: 0 } : { granted: false, tokens: taken.tokens, waitMs: taken.waitMs },
    );
  }

  private async takeMany(kvKey: string, rate: number, burst: number, want: number): Promise<{ granted: number; tokens: number; waitMs: number }> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const entry = await this.kv.get(kvKey);
      const prev = entry && entry.operation === "PUT" ? parseBucket(entry) : undefined;
      // Ahead only while the bucket would stay over a quarter full: exact near the limit.
      const ahead = Math.min(MAX_LEASE, Math.floor(rate * (LEASE_MS / 1000)));
      const level = takeFromBucket(prev, rate, burst, 0, this.now()).state.tokens;
      const take = takeFromBucket(prev, rate, burst, level - want - ahead >= burst / 4 ? want + ahead : want, this.now());
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

/** How long tokens taken ahead stay usable. */
const LEASE_MS = 200;
/** Most tokens taken ahead at once, whatever the rate. */
const MAX_LEASE = 1_000;

interface Lease {
  tokens: number;
  /** The shared bucket's level when the lease was taken (for RateLimit-Remaining). */
  shared: number;
  until: number;
}

function parseBucket(e: KvEntry): BucketState | undefined {
  try {
    const s = e.json<BucketState>();
    return Number.isFinite(s.tokens) && Number.isFinite(s.at) ? s : undefined;
  } catch {
    return undefined;
  }
}
