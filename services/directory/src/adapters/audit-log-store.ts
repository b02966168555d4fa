import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import { AUDIT_RETENTION_DAYS, type AuditLogEntry, type AuditLogQuery, type AuditLogRepository } from "../domain/audit-log.js";
import { asDoc, insertUnique, type Stored } from "./documents.js";

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
