import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { SendingDomains } from "../domain/ports.js";

const RPC = { timeoutMs: 15_000 };

/** The accounts unit's sending domains over Connect (AccountsService): the domain itself, then each parent with two labels or more. */
export class AccountsClient implements SendingDomains {
  constructor(private readonly client: Client<typeof AccountsService>) {}

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
