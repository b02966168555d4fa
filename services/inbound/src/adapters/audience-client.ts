import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { SuppressionReason, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { SuppressionReason as Reason } from "../domain/model.js";
import type { Suppressions } from "../domain/ports.js";

const RPC = { timeoutMs: 15_000 };

const REASON: Record<Reason, SuppressionReason> = {
  hard_bounce: SuppressionReason.HARD_BOUNCE,
  complaint: SuppressionReason.COMPLAINT,
  unsubscribed: SuppressionReason.UNSUBSCRIBED,
};

/** The audience unit's suppression list and contacts over Connect (ContactService). */
export class AudienceClient implements Suppressions {
  constructor(private readonly client: Client<typeof ContactService>) {}

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
