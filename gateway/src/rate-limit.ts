import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { bucketLevel, secondsUntilFull, takeFromBucket, type BucketState } from "@mailroom/kit/token-bucket.js";
import { refusal } from "./errors.js";

/** What taking one token from a shared bucket answered. */
export interface BucketTake {
  granted: boolean;
  /** Tokens left after the take. */
  tokens: number;
  /** 0 when granted, else ms until a token is due. */
  waitMs: number;
}

/** Token buckets by key; the gateway's processes share them through NATS KV (rate-limit-kv.ts). */
export interface TokenBuckets {
  take(key: string, rate: number, burst: number): Promise<BucketTake>;
}

/** Buckets of one process (unit tests, a single gateway); the least recently used are forgotten first. */
export class MemoryTokenBuckets implements TokenBuckets {
  private readonly buckets = new LRUCache<string, BucketState>({ max: 100_000 });
  constructor(private readonly now: () => number = Date.now) {}

  async take(key: string, rate: number, burst: number): Promise<BucketTake> {
    const t = takeFromBucket(this.buckets.get(key), rate, burst, 1, this.now());
    if (t.granted) this.buckets.set(key, t.state);
    return { granted: t.granted > 0, tokens: t.state.tokens, waitMs: t.waitMs };
  }
}

export interface KeyRateLimit {
  buckets: TokenBuckets;
  perMinute: number;
  burst: number;
}

const rateLimited = (message: string) => refusal({ code: "rate_limited", message });

/**
 * The per-API-key token bucket (DESIGN §6): `perMinute` tokens a minute, at most `burst`
 * at once. Every answer carries the IETF draft headers RateLimit-Limit (the bucket size),
 * RateLimit-Remaining and RateLimit-Reset (seconds until the bucket is full again); a 429
 * adds Retry-After (seconds until the next token).
 */
export function createKeyRateLimitHook(limit: KeyRateLimit) {
  const rate = limit.perMinute / 60;
  return async function keyRateLimit(request: FastifyRequest, reply: FastifyReply) {
    const keyId = request.auth?.keyId;
    if (!keyId) return;
    let take: BucketTake;
    try {
      take = await limit.buckets.take(keyId, rate, limit.burst);
    } catch (err) {
      // The shared buckets are unreachable (e.g. a NATS node failing over): let the request
      // through rather than answer 500; the send path itself still needs JetStream.
      request.log.warn({ err }, "rate limit buckets unavailable; request let through");
      return;
    }
    reply.header("ratelimit-limit", limit.burst);
    reply.header("ratelimit-remaining", Math.max(0, Math.floor(take.tokens)));
    if (take.granted) {
      reply.header("ratelimit-reset", secondsUntilFull(take.tokens, rate, limit.burst));
      return;
    }
    const retryAfter = Math.max(1, Math.ceil(take.waitMs / 1000));
    reply.header("ratelimit-reset", retryAfter);
    reply.header("retry-after", retryAfter);
    throw rateLimited(`Rate limit of ${limit.perMinute} requests per minute (bursts of ${limit.burst}) exceeded for this API key; retry in ${retryAfter} s`);
  };
}

/**
 * Failed API key attempts per client address, before they reach the directory: each
 * lookup of a key not already verified takes a token from the address's bucket (refunded
 * when the key turns out valid), and an empty bucket is a 429 without a lookup. Kept per
 * process: it only has to make guessing keys slow.
 */
export class AuthFailureLimiter {
  private readonly buckets = new LRUCache<string, BucketState>({ max: 50_000 });
  private readonly rate: number;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.rate = perMinute / 60;
  }

  /** Takes one attempt for `address`, or refuses with 429 (and Retry-After) when it has none left. */
  attempt(address: string, reply?: FastifyReply): void {
    const t = takeFromBucket(this.buckets.get(address), this.rate, this.perMinute, 1, this.now());
    if (t.granted) {
      this.buckets.set(address, t.state);
      return;
    }
    const retryAfter = Math.max(1, Math.ceil(t.waitMs / 1000));
    reply?.header("retry-after", retryAfter);
    throw rateLimited(`Too many failed API key attempts from this address; retry in ${retryAfter} s`);
  }

  /** Gives an attempt back: the key was valid. */
  refund(address: string): void {
    const state = this.buckets.get(address);
    if (!state) return;
    const level = bucketLevel(state, this.rate, this.perMinute, this.now());
    this.buckets.set(address, { tokens: Math.min(this.perMinute, level.tokens + 1), at: Math.max(state.at, this.now()) });
  }
}
