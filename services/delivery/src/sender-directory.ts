import type { Client } from "@connectrpc/connect";
import { SuppressionReason, type DirectoryService } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { asPermanentWhenFinal } from "./content-source.js";
import type { SenderCheck, SenderDirectory } from "./repositories.js";

/**
 * The directory's answer for a sender (allowed? DKIM key?) is cached briefly per
 * workspace and from: a broadcast asks the same question for every recipient.
 */
export class RpcSenderDirectory implements SenderDirectory {
  private readonly cache = new Map<string, { value: SenderCheck; expiresAt: number }>();
  private readonly loading = new Map<string, Promise<SenderCheck>>();

  constructor(
    private readonly directory: Client<typeof DirectoryService>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    const key = `${workspaceId}\u0000${from.toLowerCase()}`;
    const hit = this.cache.get(key);
    if (hit && hit.expiresAt > this.now()) return hit.value;
    const pending = this.loading.get(key);
    if (pending) return pending;
    const load = this.fetch(workspaceId, from)
      .then((value) => {
        if (this.cache.size > 10_000) this.cache.clear();
        this.cache.set(key, { value, expiresAt: this.now() + this.ttlMs });
        return value;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, load);
    return load;
  }

  private async fetch(workspaceId: string, from: string): Promise<SenderCheck> {
    try {
      const res = await this.directory.checkSender({ workspaceId, from });
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

  async addHardBounce(workspaceId: string, email: string, detail: string): Promise<void> {
    await this.directory.addSuppression({ workspaceId, email, reason: SuppressionReason.HARD_BOUNCE, detail });
  }
}
