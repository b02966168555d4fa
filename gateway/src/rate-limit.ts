import type { FastifyReply, FastifyRequest } from "fastify";
import { AddressAttempts, secondsUntilFull, type BucketTake, type TokenBuckets } from "@mailroom/kit/token-bucket.js";
import { refusal } from "@mailroom/http/errors.js";

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
 * Failed API key attempts per client address, before they reach the accounts unit: each
 * lookup of a key not already verified takes a token from the address's bucket (refunded
 * when the key turns out valid), and an empty bucket is a 429 without a lookup. Kept per
 * process: it only has to make guessing keys slow.
 */
export class AuthFailureLimiter {
  private readonly attempts: AddressAttempts;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.attempts = new AddressAttempts(perMinute, now);
  }

  /** Takes one attempt for `address`, or refuses with 429 (and Retry-After) when it has none left. */
  attempt(address: string, reply?: FastifyReply): void {
    const taken = this.attempts.attempt(address);
    if (taken.ok) return;
    reply?.header("retry-after", taken.retryAfterS);
    throw rateLimited(`Too many failed API key attempts from this address; retry in ${taken.retryAfterS} s`);
  }

  /** Gives an attempt back: the key was valid. */
  refund(address: string): void {
    this.attempts.refund(address);
  }
}
