import { conflict, type AppError } from "@mailroom/kit/errors.js";
import { recordOf, type EmailRecord } from "./model.js";
import type { Clock, EmailStore, IdempotencyStore } from "./ports.js";

/** What a request holding an idempotency key may do. */
export type GateResult =
  | { kind: "proceed"; emailId: string }
  | { kind: "replay"; record: EmailRecord }
  | { kind: "refused"; error: AppError };

const reused = () => conflict("idempotency_key_reused", "This idempotencyKey was already used with a different payload");
const inProgress = () =>
  conflict("idempotency_request_in_progress", "A request with this idempotencyKey is still in progress; retry shortly");

/**
 * Idempotency keys per workspace (design §6): the first request inserts the key with
 * the email id it will create; a second one with the same payload gets the first
 * response back, with another payload a 409, and while the first is in flight a 409.
 * A request that died mid-flight leaves a lease that runs out; whoever takes the key
 * over then finishes with the same email id, so nothing is ever created twice.
 */
export class IdempotencyGate {
  constructor(
    private readonly keys: IdempotencyStore,
    private readonly emails: EmailStore,
    private readonly clock: Clock,
    private readonly leaseMs: number,
  ) {}

  async enter(workspaceId: string, key: string, payloadHash: string, emailId: string): Promise<GateResult> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.clock.now();
      const leaseUntil = new Date(now.getTime() + this.leaseMs);
      const inserted = await this.keys.tryInsert({
        workspaceId, key, payloadHash, emailId, state: "in_flight", leaseUntil, createdAt: now,
      });
      if (inserted) return { kind: "proceed", emailId };

      const existing = await this.keys.get(workspaceId, key);
      if (!existing) continue; // expired between the two calls: try again
      if (existing.payloadHash !== payloadHash) return { kind: "refused", error: reused() };
      if (existing.state === "done" && existing.record) return { kind: "replay", record: existing.record };
      if (existing.leaseUntil.getTime() > now.getTime()) return { kind: "refused", error: inProgress() };

      const taken = await this.keys.takeOver(workspaceId, key, now, leaseUntil);
      if (!taken) return { kind: "refused", error: inProgress() };
      // The dead request may have stored its email before dying: answer with it.
      const email = await this.emails.find(workspaceId, taken.emailId);
      if (email) {
        const record = recordOf(email);
        await this.keys.complete(workspaceId, key, taken.emailId, record);
        return { kind: "replay", record };
      }
      return { kind: "proceed", emailId: taken.emailId };
    }
    return { kind: "refused", error: inProgress() };
  }

  complete(workspaceId: string, key: string, emailId: string, record: EmailRecord): Promise<void> {
    return this.keys.complete(workspaceId, key, emailId, record);
  }

  release(workspaceId: string, key: string, emailId: string): Promise<void> {
    return this.keys.release(workspaceId, key, emailId);
  }
}
