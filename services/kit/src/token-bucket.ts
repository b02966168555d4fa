/**
 * Token bucket arithmetic, kept pure so the shared (KV) bucket and its tests agree.
 * A bucket holds at most `burst` tokens and refills at `rate` tokens per second.
 */
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
