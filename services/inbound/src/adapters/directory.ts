import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { type DirectoryService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { SuppressionReason as Reason } from "../domain/model.js";
import type { SendingDomains, Suppressions } from "../domain/ports.js";

const RPC = { timeoutMs: 15_000 };

const REASON: Record<Reason, SuppressionReason> = {
  hard_bounce: SuppressionReason.HARD_BOUNCE,
  complaint: SuppressionReason.COMPLAINT,
  unsubscribed: SuppressionReason.UNSUBSCRIBED,
};

/** The directory's suppression list and contacts over Connect. */
export class DirectorySuppressionsClient implements Suppressions {
  constructor(private readonly client: Client<typeof DirectoryService>) {}

  async suppress(workspaceId: string, email: string, reason: Reason, detail: string): Promise<void> {
    await this.client.addSuppression({ workspaceId, email, reason: REASON[reason], detail }, RPC);
  }

  async markUnsubscribed(workspaceId: string, email: string): Promise<void> {
    try {
      await this.client.updateContact({ workspaceId, contact: { email, subscribed: false } }, RPC);
    } catch (err) {
      // Not every recipient is a contact (transactional mail); the suppression is what counts.
      if (err instanceof ConnectError && err.code === Code.NotFound) return;
      throw err;
    }
  }
}

/** The directory's sending domains over Connect: the domain itself, then each parent with two labels or more. */
export class DirectoryDomainsClient implements SendingDomains {
  constructor(private readonly client: Client<typeof DirectoryService>) {}

  async verifiedFor(workspaceId: string, domain: string): Promise<boolean> {
    const labels = domain.split(".");
    for (let i = 0; i <= labels.length - 2; i++) {
      try {
        const res = await this.client.getDomain({ workspaceId, domain: labels.slice(i).join(".") }, RPC);
        if (res.domain?.verified) return true;
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.NotFound) continue;
        throw err;
      }
    }
    return false;
  }
}
