import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import type { ApiKey } from "@mailroom/records/model.js";
import type { ApiKeyRepository } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export class ApiKeyStore implements ApiKeyRepository {
  private constructor(private readonly keys: Collection<Stored<ApiKey>>) {}

  static async open(store: Store): Promise<ApiKeyStore> {
    const keys = store.collection<Stored<ApiKey>>("api_keys");
    await Promise.all([
      keys.createIndex({ keys: { hash: 1 }, unique: true }), // authenticate; one owner per key
      keys.createIndex({ keys: { workspaceId: 1 } }),
      keys.createIndex({ keys: { workspaceId: 1, createdAt: 1 } }),
    ]);
    return new ApiKeyStore(keys);
  }

  insert(key: ApiKey): Promise<boolean> {
    return insertUnique(this.keys, asDoc(key));
  }

  findByHash(hash: string): Promise<ApiKey | null> {
    return this.keys.findOne({ hash });
  }

  find(workspaceId: string, keyId: string): Promise<ApiKey | null> {
    return this.keys.findOne({ _id: keyId, workspaceId });
  }

  list(workspaceId: string, limit: number): Promise<ApiKey[]> {
    return this.keys.find({ workspaceId }, { sort: { _id: 1 }, limit });
  }

  page(workspaceId: string, opts: { startAt?: Date; limit: number; newestFirst: boolean }): Promise<ApiKey[]> {
    const filter: Filter = { workspaceId };
    if (opts.startAt) filter.createdAt = { [opts.newestFirst ? "$lte" : "$gte"]: opts.startAt };
    const order = opts.newestFirst ? -1 : 1;
    return this.keys.find(filter, { sort: { createdAt: order, _id: order }, limit: opts.limit });
  }

  update(workspaceId: string, keyId: string, changes: Partial<Pick<ApiKey, "name" | "scopes" | "updatedAt">>): Promise<ApiKey | null> {
    return this.keys.findOneAndUpdate({ _id: keyId, workspaceId }, { $set: changes }, { returnDocument: "after" });
  }

  async setScopes(keyId: string, scopes: string[]): Promise<void> {
    await this.keys.updateOne({ _id: keyId }, { $set: { scopes } });
  }

  async touchLastUsed(keyId: string, at: Date): Promise<void> {
    // Another process may have written a later use meanwhile: never move it back.
    await this.keys.updateOne({ _id: keyId, $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: at } }] }, { $set: { lastUsedAt: at } });
  }

  async revoke(workspaceId: string, keyId: string, at: Date): Promise<void> {
    await this.keys.updateOne({ _id: keyId, workspaceId, revokedAt: null }, { $set: { revokedAt: at } });
  }
}
