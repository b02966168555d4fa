import type { NatsConnection } from "@nats-io/transport-node";
import { KvTokenBuckets, keyBucketIdleMs } from "@mailroom/kit/kv-token-buckets.js";

/**
 * The gateway's per-API-key budget, shared: the same KV bucket and entry (kit's
 * KvTokenBuckets), so a key's budget is one whether it sends over HTTP or SMTP. One message
 * submitted takes one token, as one API request does.
 */
export class KeyRateLimit {
  private constructor(
    private readonly buckets: KvTokenBuckets,
    private readonly perMinute: number,
    private readonly burst: number,
  ) {}

  static async open(nc: NatsConnection, perMinute: number, burst: number): Promise<KeyRateLimit> {
    return new KeyRateLimit(await KvTokenBuckets.open(nc, { idleMs: keyBucketIdleMs(perMinute, burst) }), perMinute, burst);
  }

  /** Takes one token for the key; the seconds to wait when it has none. */
  async take(keyId: string): Promise<{ ok: true } | { ok: false; retryAfterS: number; message: string }> {
    const take = await this.buckets.take(keyId, this.perMinute / 60, this.burst);
    if (take.granted) return { ok: true };
    const retryAfterS = Math.max(1, Math.ceil(take.waitMs / 1000));
    return { ok: false, retryAfterS, message: `rate limit of ${this.perMinute} requests per minute (bursts of ${this.burst}) exceeded for this API key; retry in ${retryAfterS} s` };
  }
}
