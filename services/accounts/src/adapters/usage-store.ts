import type { Collection, Store } from "@mailroom/store/port.js";
import type { UsageCounter } from "@mailroom/records/model.js";
import type { UsageRepository } from "@mailroom/records/ports.js";
import { ensureDoc, withoutId, type Stored } from "@mailroom/records/documents.js";

export class UsageStore implements UsageRepository {
  private constructor(private readonly usage: Collection<Stored<UsageCounter>>) {}

  static async open(store: Store): Promise<UsageStore> {
    return new UsageStore(store.collection<Stored<UsageCounter>>("usage"));
  }

  ensure(counter: UsageCounter): Promise<void> {
    return ensureDoc(this.usage, { _id: counter._id }, { $setOnInsert: withoutId(counter) });
  }

  find(id: string): Promise<UsageCounter | null> {
    return this.usage.findOne({ _id: id });
  }

  /** {used <= limit - count} → $inc in one atomic findOneAndUpdate. */
  reserve(id: string, count: number, limit: number): Promise<UsageCounter | null> {
    return this.usage.findOneAndUpdate({ _id: id, used: { $lte: limit - count } }, { $inc: { used: count } }, { returnDocument: "after" });
  }

  async release(id: string, count: number): Promise<void> {
    const done = await this.usage.findOneAndUpdate({ _id: id, used: { $gte: count } }, { $inc: { used: -count } });
    if (!done) await this.usage.updateOne({ _id: id, used: { $lt: count } }, { $set: { used: 0 } });
  }
}
