import { hash } from "node:crypto";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";

export interface KeyIdentity {
  workspaceId: string;
  keyId: string;
}

/** Why a password was not accepted: a refused key (535), a banned workspace (535), or the accounts unit unreachable (454). */
export type KeyCheck = { ok: true; identity: KeyIdentity } | { ok: false; kind: "refused" | "banned" | "unavailable"; message: string };

/** Accounts answers that mean "no such key", as the gateway reads them. */
const UNKNOWN_KEY = [Code.Unauthenticated, Code.NotFound, Code.PermissionDenied, Code.InvalidArgument];
/** The scope POST /v1/emails requires. */
const SEND_SCOPE = "api_user";

/**
 * API keys as SMTP passwords, checked by the accounts unit's Authenticate (the gateway's check:
 * keys are stored hashed there). A success is cached briefly by the key's hash, never the key.
 */
export class ApiKeys {
  private readonly cache: LRUCache<string, KeyIdentity>;

  constructor(
    private readonly accounts: Client<typeof AccountsService>,
    cacheMs: number,
  ) {
    this.cache = new LRUCache({ max: 10_000, ttl: Math.max(1, cacheMs) });
  }

  async check(apiKey: string): Promise<KeyCheck> {
    const keyHash = hash("sha256", apiKey, "hex");
    const cached = this.cache.get(keyHash);
    if (cached) return { ok: true, identity: cached };
    try {
      const res = await this.accounts.authenticate({ apiKey, requiredScopes: [SEND_SCOPE] }, { timeoutMs: 10_000 });
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
