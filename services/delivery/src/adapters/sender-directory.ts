import type { Client } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import { SuppressionReason, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { asPermanentWhenFinal } from "./content-source.js";
import type { SenderCheck, SenderDirectory } from "../domain/ports.js";

/** The neighbours the `SenderDirectory` port is made of. */
export interface SenderDirectoryClients {
  /** The accounts unit's AccountsService: sender checks (allowed? DKIM key?). */
  accounts: Client<typeof AccountsService>;
  /** The audience unit's ContactService: the suppressions of other addresses' hard bounces. */
  contacts: Client<typeof ContactService>;
}

/**
 * The accounts unit's answer for a sender (allowed? DKIM key?) is cached briefly per
 * workspace and from: a broadcast asks the same question for every recipient, and
 * concurrent misses for one key ask once (the cache's fetchMethod). Suppressions go to the
 * audience unit.
 */
export class SenderDirectoryClient implements SenderDirectory {
  private readonly cache?: LRUCache<string, SenderCheck, { workspaceId: string; from: string }>;

  constructor(
    private readonly clients: SenderDirectoryClients,
    /** 0: no caching (lru-cache would read a ttl of 0 as "forever"). */
    ttlMs: number,
    maxEntries = 10_000,
  ) {
    if (ttlMs <= 0) return;
    this.cache = new LRUCache({
      max: maxEntries,
      ttl: ttlMs,
      fetchMethod: (_key, _stale, { context }) => this.fetch(context.workspaceId, context.from),
      ignoreFetchAbort: true,
    });
  }

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    if (!this.cache) return this.fetch(workspaceId, from);
    const found = await this.cache.fetch(`${workspaceId}\u0000${from.toLowerCase()}`, { context: { workspaceId, from } });
    if (!found) throw new Error("sender check returned nothing"); // fetchMethod never resolves empty
    return found;
  }

  private async fetch(workspaceId: string, from: string): Promise<SenderCheck> {
    try {
      const res = await this.clients.accounts.checkSender({ workspaceId, from });
      return {
        allowed: res.allowed,
        address: res.address,
        name: res.name,
        dkim: res.dkim && res.dkim.privateKeyPem
          ? { domain: res.dkim.domain, selector: res.dkim.selector, privateKeyPem: res.dkim.privateKeyPem }
          : undefined,
      };
    } catch (err) {
      throw asPermanentWhenFinal(err, "sender check");
    }
  }

  async suppressOther(workspaceId: string, email: string, detail: string): Promise<void> {
    await this.clients.contacts.addSuppression({ workspaceId, email, reason: SuppressionReason.HARD_BOUNCE, detail });
  }
}
