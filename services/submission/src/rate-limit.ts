import { createHash } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { openKvBucket } from "@mailroom/kit/jetstream.js";
import { takeFromBucket, type BucketState } from "@mailroom/kit/token-bucket.js";

/**
 * The gateway's per-API-key token bucket, shared: the same JetStream KV bucket and entry
 * (`mailroom_gateway_rate_limit`, `key.<digest of the key id>`, `{ tokens, at }` updated by
 * compare-and-set), so a key's budget is one whether it sends over HTTP or SMTP. One
 * message submitted takes one token, as one API request does.
 */
export class KeyRateLimit {
  private readonly rate: number;

  private constructor(
    private readonly kv: KV,
    private readonly perMinute: number,
    private readonly burst: number,
  ) {
    this.rate = perMinute / 60;
  }

  static async open(nc: NatsConnection, perMinute: number, burst: number): Promise<KeyRateLimit> {
    // The gateway's bucket options (gateway/src/main.ts): an idle key's entry expires once it would be full again.
    const idleMs = Math.max(60_000, Math.ceil((burst / perMinute) * 60_000) * 2);
    return new KeyRateLimit(await openKvBucket(nc, "mailroom_gateway_rate_limit", { history: 1, ttl: idleMs }), perMinute, burst);
  }

  /** Takes one token for the key; the seconds to wait when it has none. */
  async take(keyId: string, now = Date.now): Promise<{ ok: true } | { ok: false; retryAfterS: number; message: string }> {
    const kvKey = `key.${createHash("sha256").update(keyId).digest("hex").slice(0, 32)}`;
    for (let attempt = 0; attempt < 20; attempt++) {
      const entry = await this.kv.get(kvKey);
      let prev: BucketState | undefined;
      try {
        prev = entry && entry.operation === "PUT" ? entry.json<BucketState>() : undefined;
      } catch {
        prev = undefined;
      }
      if (prev && !(Number.isFinite(prev.tokens) && Number.isFinite(prev.at))) prev = undefined;
      const take = takeFromBucket(prev, this.rate, this.burst, 1, now());
      if (!take.granted) return this.refused(take.waitMs);
      try {
        if (entry) await this.kv.update(kvKey, JSON.stringify(take.state), entry.revision);
        else await this.kv.create(kvKey, JSON.stringify(take.state));
        return { ok: true };
      } catch {
        // Another process took tokens between our read and write: read again.
        await new Promise((r) => setTimeout(r, Math.random() * 3 * (attempt + 1)));
      }
    }
    return this.refused(1_000);
  }

  private refused(waitMs: number) {
    const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
    return { ok: false as const, retryAfterS, message: `rate limit of ${this.perMinute} requests per minute (bursts of ${this.burst}) exceeded for this API key; retry in ${retryAfterS} s` };
  }
}
