import { DuplicateKeyError, type Collection, type Filter, type Store } from "@mailroom/store/port.js";
import { AUDIT_RETENTION_DAYS, type AuditLogEntry, type AuditLogQuery, type AuditLogRepository } from "../domain/audit-log.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

/** The audit_log collection: a year of entries (TTL on `at`), indexed for ListAuditLog's filters. */
export class AuditLogStore implements AuditLogRepository {
  private constructor(private readonly entries: Collection<Stored<AuditLogEntry>>) {}

  static async open(store: Store): Promise<AuditLogStore> {
    const entries = store.collection<Stored<AuditLogEntry>>("audit_log");
    await Promise.all([
      entries.createIndex({ keys: { at: 1 }, expireAfterSeconds: AUDIT_RETENTION_DAYS * 86_400 }),
      entries.createIndex({ keys: { workspaceId: 1, at: -1, _id: -1 } }),
      entries.createIndex({ keys: { workspaceId: 1, "actor.id": 1, at: -1 } }),
      entries.createIndex({ keys: { workspaceId: 1, "resource.type": 1, "resource.id": 1, at: -1 } }),
    ]);
    return new AuditLogStore(entries);
  }

  async insert(entry: AuditLogEntry): Promise<void> {
    await insertUnique(this.entries, asDoc(entry));
  }

  /**
   * One insertMany (one transaction on the embedded store, one round trip to MongoDB) for the
   * usual batch, none of whose entries is stored yet. A batch redelivered after a crash between
   * storing and acking holds stored entries: insertMany is ordered and stops at the first
   * duplicate, so the entries still missing are then found and inserted one by one, each a
   * no-op if another process stored it meanwhile.
   */
  async insertMany(entries: AuditLogEntry[]): Promise<void> {
    // An entry published again after the stream's duplicate window is a second message with
    // the same id, and may arrive in the same batch: stored once.
    const unique = [...new Map(entries.map((e) => [e._id, e])).values()];
    if (unique.length === 0) return;
    try {
      await this.entries.insertMany(unique.map(asDoc));
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    const stored = await this.entries.find({ _id: { $in: unique.map((e) => e._id) } }, { projection: { _id: 1 } });
    const storedIds = new Set(stored.map((d) => d._id));
    for (const entry of unique) if (!storedIds.has(entry._id)) await insertUnique(this.entries, asDoc(entry));
  }

  find(q: AuditLogQuery): Promise<AuditLogEntry[]> {
    const and: Filter[] = [{ workspaceId: q.workspaceId }];
    if (q.since) and.push({ at: { $gte: q.since } });
    if (q.until) and.push({ at: { $lt: q.until } });
    if (q.actor) and.push({ "actor.id": q.actor.id, ...(q.actor.kind ? { "actor.kind": q.actor.kind } : {}) });
    if (q.resource) and.push({ "resource.type": q.resource.type, ...(q.resource.id !== undefined ? { "resource.id": q.resource.id } : {}) });
    if (q.before) and.push({ $or: [{ at: { $lt: q.before.at } }, { at: q.before.at, _id: { $lt: q.before.id } }] });
    return this.entries.find({ $and: and }, { sort: { at: -1, _id: -1 }, limit: q.limit });
  }
}
