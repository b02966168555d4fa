/**
 * Token bucket arithmetic, kept pure so the shared (KV) bucket and its tests agree.
 * A bucket holds at most `burst` tokens and refills at `rate` tokens per second.
 */
import { LRUCache } from "lru-cache";
export interface BucketState {
  tokens: number;
  /** Epoch ms of the last update. */
  at: number;
}

export interface Take {
  state: BucketState;
  granted: number;
  /** 0 when something was granted, else ms until one token is due. */
  waitMs: number;
}

export function takeFromBucket(prev: BucketState | undefined, rate: number, burst: number, want: number, now: number): Take {
  const start = prev ?? { tokens: burst, at: now };
  // A clock that went backwards (another process's) must not mint tokens.
  const elapsed = Math.max(0, now - start.at);
  const tokens = Math.min(burst, start.tokens + (elapsed / 1000) * rate);
  const granted = Math.max(0, Math.min(want, Math.floor(tokens)));
  const left = tokens - granted;
  const waitMs = granted > 0 ? 0 : Math.ceil(((1 - left) / rate) * 1000);
  return { state: { tokens: left, at: Math.max(now, start.at) }, granted, waitMs };
}

/** The bucket's level now (refilled, nothing taken) and the ms until it holds one whole token. */
export function bucketLevel(prev: BucketState | undefined, rate: number, burst: number, now: number): { tokens: number; waitMs: number } {
  const { state } = takeFromBucket(prev, rate, burst, 0, now);
  return { tokens: state.tokens, waitMs: state.tokens >= 1 ? 0 : Math.ceil(((1 - state.tokens) / rate) * 1000) };
}

/** Seconds until a bucket at `tokens` is full again (the `RateLimit-Reset` of a per-key budget). */
export const secondsUntilFull = (tokens: number, rate: number, burst: number) => Math.max(0, Math.ceil((burst - tokens) / rate));

/** What taking one token from a (possibly shared) bucket answered. */
export interface BucketTake {
  granted: boolean;
  /** Tokens left after the take. */
  tokens: number;
  /** 0 when granted, else ms until a token is due. */
  waitMs: number;
}

/** Token buckets by key: in one process (MemoryTokenBuckets) or shared through NATS KV (kv-token-buckets.ts). */
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

/**
 * Failed API-key attempts per client address, before the accounts unit is asked (the gateway's
 * HTTP auth and SMTP submission's AUTH): each check of a key not already verified takes an
 * attempt, given back when the key was valid; an address with none left is refused without
 * a lookup. Kept per process: it only has to make guessing keys slow.
 */
export class AddressAttempts {
  private readonly buckets = new LRUCache<string, BucketState>({ max: 50_000 });
  private readonly rate: number;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.rate = perMinute / 60;
  }

  /** Takes an attempt; the seconds to wait when the address has none left. */
  attempt(address: string): { ok: true } | { ok: false; retryAfterS: number } {
    const t = takeFromBucket(this.buckets.get(address), this.rate, this.perMinute, 1, this.now());
    if (!t.granted) return { ok: false, retryAfterS: Math.max(1, Math.ceil(t.waitMs / 1000)) };
    this.buckets.set(address, t.state);
    return { ok: true };
  }

  /** Gives an attempt back: the key was valid. */
  refund(address: string): void {
    const state = this.buckets.get(address);
    if (!state) return;
    const level = bucketLevel(state, this.rate, this.perMinute, this.now());
    this.buckets.set(address, { tokens: Math.min(this.perMinute, level.tokens + 1), at: Math.max(state.at, this.now()) });
  }
}
