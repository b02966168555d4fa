import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import type { Suppression, SuppressionReason } from "../domain/model.js";
import type { SuppressionRepository } from "../domain/ports.js";
import { ensureDoc, withoutId, type Stored } from "./documents.js";

/** Reasons a stronger one (a bounce, a complaint) replaces. */
const WEAK_REASONS: SuppressionReason[] = ["unsubscribed", "manual"];

export class SuppressionStore implements SuppressionRepository {
  private constructor(private readonly suppressions: Collection<Stored<Suppression>>) {}

  static async open(store: Store): Promise<SuppressionStore> {
    const suppressions = store.collection<Stored<Suppression>>("suppressions");
    await suppressions.createIndex({ keys: { workspaceId: 1, emailLower: 1 }, unique: true });
    return new SuppressionStore(suppressions);
  }

  ensure(suppression: Suppression): Promise<void> {
    return ensureDoc(this.suppressions, { _id: suppression._id }, { $setOnInsert: withoutId(suppression) });
  }

  async strengthen(id: string, reason: SuppressionReason, detail: string): Promise<void> {
    await this.suppressions.updateOne({ _id: id, reason: { $in: WEAK_REASONS } }, { $set: { reason, detail } });
  }

  find(id: string): Promise<Suppression | null> {
    return this.suppressions.findOne({ _id: id });
  }

  findMany(workspaceId: string, ids: string[]): Promise<Suppression[]> {
    return this.suppressions.find({ _id: { $in: ids }, workspaceId });
  }

  async remove(id: string, reason?: SuppressionReason): Promise<void> {
    await this.suppressions.deleteOne(reason ? { _id: id, reason } : { _id: id });
  }

  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Suppression[]> {
    const filter: Filter = { workspaceId };
    if (opts.after) filter._id = { $gt: opts.after };
    return this.suppressions.find(filter, { sort: { _id: 1 }, limit: opts.limit });
  }
}
