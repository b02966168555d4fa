import { hash } from "node:crypto";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import type { DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { bucketLevel, takeFromBucket, type BucketState } from "@mailroom/kit/token-bucket.js";

export interface KeyIdentity {
  workspaceId: string;
  keyId: string;
}

/** Why a password was not accepted: a refused key (535), a banned workspace (535), or the directory unreachable (454). */
export type KeyCheck = { ok: true; identity: KeyIdentity } | { ok: false; kind: "refused" | "banned" | "unavailable"; message: string };

/** Directory answers that mean "no such key", as the gateway reads them. */
const UNKNOWN_KEY = [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument];
/** The scope POST /v1/emails requires. */
const SEND_SCOPE = "api_user";

/**
 * API keys as SMTP passwords, checked by the directory's Authenticate (the gateway's check:
 * keys are stored hashed there). A success is cached briefly by the key's hash, never the key.
 */
export class ApiKeys {
  private readonly cache: LRUCache<string, KeyIdentity>;

  constructor(
    private readonly directory: Client<typeof DirectoryService>,
    cacheMs: number,
  ) {
    this.cache = new LRUCache({ max: 10_000, ttl: Math.max(1, cacheMs) });
  }

  async check(apiKey: string): Promise<KeyCheck> {
    const keyHash = hash("sha256", apiKey, "hex");
    const cached = this.cache.get(keyHash);
    if (cached) return { ok: true, identity: cached };
    try {
      const res = await this.directory.authenticate({ apiKey, requiredScopes: [SEND_SCOPE] }, { timeoutMs: 10_000 });
      const identity = { workspaceId: res.workspaceId, keyId: res.keyId };
      this.cache.set(keyHash, identity);
      return { ok: true, identity };
    } catch (err) {
      const info = errorInfoOf(err);
      if (info?.code === "workspace_banned") return { ok: false, kind: "banned", message: info.message };
      if (info?.code === "insufficient_scope") return { ok: false, kind: "refused", message: `this API key lacks the ${SEND_SCOPE} scope` };
      if (err instanceof ConnectError && UNKNOWN_KEY.includes(err.code)) return { ok: false, kind: "refused", message: "invalid API key" };
      return { ok: false, kind: "unavailable", message: (err as Error).message };
    }
  }
}

/**
 * Failed AUTH attempts per client address (the gateway's AuthFailureLimiter): each attempt
 * with a key not already verified takes a token, given back when the key was valid; an
 * address out of tokens is refused before the directory is asked.
 */
export class AuthFailures {
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

  refund(address: string): void {
    const state = this.buckets.get(address);
    if (!state) return;
    const level = bucketLevel(state, this.rate, this.perMinute, this.now());
    this.buckets.set(address, { tokens: Math.min(this.perMinute, level.tokens + 1), at: Math.max(state.at, this.now()) });
  }
}
