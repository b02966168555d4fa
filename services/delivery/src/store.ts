import { DuplicateKeyError, type Collection, type Store } from "../../kit/src/store/port.js";
import type { ClaimResult, DeliveriesRepository, DeliveryRecord, Outcome } from "./repositories.js";

/** How long a finished delivery stays in the ledger (redeliveries come within minutes). */
const KEEP_FINISHED_SECONDS = 14 * 24 * 3600;

/**
 * The `deliveries` collection: one document per delivery id, moved between states only
 * with compare-and-set updates, never read-then-write.
 */
export class StoreDeliveries implements DeliveriesRepository {
  private readonly col: Collection<DeliveryRecord>;

  constructor(store: Store) {
    this.col = store.collection<DeliveryRecord>("deliveries");
  }

  async init(): Promise<void> {
    await this.col.createIndex({ keys: { updatedAt: 1 }, expireAfterSeconds: KEEP_FINISHED_SECONDS });
  }

  get(deliveryId: string): Promise<DeliveryRecord | null> {
    return this.col.findOne({ _id: deliveryId });
  }

  async claim(deliveryId: string, workspaceId: string, worker: string, now: Date, staleBefore: Date): Promise<ClaimResult> {
    // The common case, a delivery seen for the first time, is claimed by creating it.
    try {
      await this.col.insertOne({
        _id: deliveryId, workspaceId, state: "sending", attempts: 1, claimedBy: worker, claimedAt: now,
        createdAt: now, updatedAt: now,
      });
      return { claimed: true, attempts: 1 };
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const taken = await this.col.findOneAndUpdate(
      {
        _id: deliveryId,
        $or: [{ state: "deferred" }, { state: "sending", claimedAt: { $lt: staleBefore } }],
      },
      { $set: { state: "sending", claimedBy: worker, claimedAt: now, updatedAt: now }, $inc: { attempts: 1 } },
      { returnDocument: "after" },
    );
    if (taken) return { claimed: true, attempts: taken.attempts };
    return { claimed: false, record: await this.col.findOne({ _id: deliveryId }) };
  }

  async markDeferred(deliveryId: string, worker: string, outcome: Outcome, now: Date): Promise<void> {
    await this.col.updateOne(
      { _id: deliveryId, state: "sending", claimedBy: worker },
      { $set: { state: "deferred", outcome, updatedAt: now }, $unset: { claimedBy: "", claimedAt: "" } },
    );
  }

  async markFinal(deliveryId: string, workspaceId: string, outcome: Outcome, now: Date): Promise<void> {
    // "sent" is the truth whatever happened before; nothing overwrites it.
    const filter = outcome.type === "sent" ? { _id: deliveryId } : { _id: deliveryId, state: { $ne: "sent" } };
    try {
      await this.col.updateOne(
        filter,
        {
          $set: { state: outcome.type, outcome, updatedAt: now },
          $unset: { claimedBy: "", claimedAt: "" },
          $setOnInsert: { workspaceId, attempts: outcome.attempt, createdAt: now },
        },
        { upsert: true },
      );
    } catch (err) {
      // The upsert met an existing "sent" delivery: it stays sent.
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
  }

  async markSuppressed(deliveryId: string): Promise<void> {
    await this.col.updateOne({ _id: deliveryId }, { $set: { suppressed: true } });
  }
}
