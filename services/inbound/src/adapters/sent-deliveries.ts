import type { Collection, Store } from "@mailroom/store/port.js";
import type { SentDelivery } from "../domain/model.js";
import type { SentDeliveries } from "../domain/ports.js";

type SentDoc = Omit<SentDelivery, "deliveryId"> & { _id: string };

/**
 * Sent deliveries by id over kit's document store, forgotten `rememberMs` after sending
 * (a TTL index): bounces come back within days, complaints within weeks.
 */
export class StoreSentDeliveries implements SentDeliveries {
  private readonly sent: Collection<SentDoc>;

  private constructor(store: Store) {
    this.sent = store.collection<SentDoc>("sent_deliveries");
  }

  static async open(store: Store, rememberMs: number): Promise<StoreSentDeliveries> {
    const repo = new StoreSentDeliveries(store);
    await repo.sent.createIndex({ keys: { sentAt: 1 }, expireAfterSeconds: Math.ceil(rememberMs / 1000) });
    // Provider reports that carry no delivery id name the message by its Message-ID.
    await repo.sent.createIndex({ keys: { messageId: 1 } });
    return repo;
  }

  async remember(delivery: SentDelivery): Promise<void> {
    const { deliveryId, ...rest } = delivery;
    // Idempotent: a redelivered SENT event rewrites the same document.
    await this.sent.updateOne({ _id: deliveryId }, { $set: rest }, { upsert: true });
  }

  async find(deliveryId: string): Promise<SentDelivery | null> {
    return deliveryOf(await this.sent.findOne({ _id: deliveryId }));
  }

  async findByMessageId(messageId: string): Promise<SentDelivery | null> {
    if (!messageId) return null;
    return deliveryOf(await this.sent.findOne({ messageId }));
  }
}

function deliveryOf(doc: SentDoc | null): SentDelivery | null {
  if (!doc) return null;
  const { _id, ...rest } = doc;
  return { deliveryId: _id, ...rest };
}
