import { DuplicateKeyError, type BulkWriteOperation, type Collection, type Filter, type Store, type Update } from "@mailroom/store/port.js";
import type { Contact } from "@mailroom/records/model.js";
import type { ContactChange, ContactQuery, ContactRepository, ContactWrite } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";
import { deleteEngagementOf } from "./engagement-store.js";

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A contact change as a store update: fields and properties by dotted path. */
function changeUpdate(change: ContactChange): Update {
  const $set: Record<string, unknown> = { ...change.fields, updatedAt: change.updatedAt };
  // A change names the status only when it differs (Contacts.changeOf): the status changed now.
  if (change.fields.status !== undefined) $set.statusChangedAt = change.updatedAt;
  for (const [slug, value] of Object.entries(change.setProperties)) $set[`properties.${slug}`] = value;
  const $unset = Object.fromEntries(change.unsetProperties.map((slug) => [`properties.${slug}`, ""]));
  return { $set, ...(change.unsetProperties.length ? { $unset } : {}) };
}

/** The marker of the one-time status backfill (directory_migrations). */
const STATUS_BACKFILL = "contacts.status-backfill";

export class ContactStore implements ContactRepository {
  private constructor(
    private readonly contacts: Collection<Stored<Contact>>,
    private readonly store?: Store,
  ) {}

  static async open(store: Store): Promise<ContactStore> {
    const contacts = store.collection<Stored<Contact>>("contacts");
    await Promise.all([
      // One contact per email per workspace; findByEmail and unsubscribe.
      contacts.createIndex({ keys: { workspaceId: 1, emailLower: 1 }, unique: true }),
      // Cursor pages in id order.
      contacts.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
      // Audiences (status SUBSCRIBED) and the status filter, paged in id order.
      contacts.createIndex({ keys: { workspaceId: 1, status: 1, _id: 1 } }),
      // Filters on properties (segments, audiences): every path under `properties`, by value.
      contacts.createIndex({ keys: { workspaceId: 1, "properties.$**": 1 } }),
      // Group members (audiences, group listings), paged in id order.
      contacts.createIndex({ keys: { workspaceId: 1, groups: 1, _id: 1 } }),
    ]);
    // Documents written before statuses carried `subscribed`: give them their status once. Each
    // pass is a scan of every contact (no index holds a missing status), so a marker records that
    // it ran: an audience with 1,000,000 contacts would otherwise scan them twice at every start.
    const migrations = store.collection<{ _id: string; doneAt: Date }>("directory_migrations");
    if (!(await migrations.findOne({ _id: STATUS_BACKFILL }))) {
      await contacts.updateMany({ status: { $exists: false }, subscribed: false }, { $set: { status: "UNSUBSCRIBED", source: "PUBLIC_API" }, $unset: { subscribed: "" } });
      await contacts.updateMany({ status: { $exists: false } }, { $set: { status: "SUBSCRIBED", source: "PUBLIC_API" }, $unset: { subscribed: "" } });
      await migrations.updateOne({ _id: STATUS_BACKFILL }, { $set: { doneAt: new Date() } }, { upsert: true });
    }
    return new ContactStore(contacts, store);
  }

  insert(contact: Contact): Promise<boolean> {
    return insertUnique(this.contacts, asDoc(contact));
  }

  findByEmail(workspaceId: string, emailLower: string): Promise<Contact | null> {
    return this.contacts.findOne({ workspaceId, emailLower });
  }

  findById(workspaceId: string, id: string): Promise<Contact | null> {
    return this.contacts.findOne({ _id: id, workspaceId });
  }

  /** Which of these ids are the workspace's contacts (point lookups of _ids, no document decoded but the id). */
  async existingIds(workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const docs = await this.contacts.find({ _id: { $in: [...new Set(ids)] }, workspaceId }, { projection: { _id: 1 } });
    return new Set(docs.map((d) => d._id));
  }

  update(workspaceId: string, id: string, change: ContactChange): Promise<Contact | null> {
    return this.contacts.findOneAndUpdate({ _id: id, workspaceId }, changeUpdate(change), { returnDocument: "after" });
  }

  findManyByEmail(workspaceId: string, emailsLower: string[]): Promise<Contact[]> {
    if (!emailsLower.length) return Promise.resolve([]);
    // Served by the unique (workspaceId, emailLower) index: one point lookup per address.
    return this.contacts.find({ workspaceId, emailLower: { $in: emailsLower } });
  }

  async upsertMany(workspaceId: string, writes: ContactWrite[]): Promise<boolean> {
    const operations: BulkWriteOperation<Stored<Contact>>[] = writes.map((write) =>
      "insert" in write
        ? { insertOne: { document: asDoc(write.insert) } }
        : { updateOne: { filter: { _id: write.id, workspaceId }, update: changeUpdate(write.change) } },
    );
    const updates = operations.length - writes.filter((write) => "insert" in write).length;
    try {
      const result = await this.contacts.bulkWrite(operations);
      return result.matchedCount === updates; // fewer: a contact was deleted since it was read
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false; // another writer inserted one of the addresses first
      throw err;
    }
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    await this.contacts.deleteOne({ _id: id, workspaceId });
    // Its engagement records go with it (every deletion, erasure included).
    if (this.store) await deleteEngagementOf(this.store, workspaceId, id);
  }

  page(workspaceId: string, opts: ContactQuery & { after?: string; limit: number; newestFirst?: boolean }): Promise<Contact[]> {
    const filter = this.filter(workspaceId, opts);
    if (opts.after) filter._id = { [opts.newestFirst ? "$lt" : "$gt"]: opts.after };
    return this.contacts.find(filter, { sort: { _id: opts.newestFirst ? -1 : 1 }, limit: opts.limit });
  }

  count(workspaceId: string, query: ContactQuery = {}): Promise<number> {
    return this.contacts.countDocuments(this.filter(workspaceId, query));
  }

  unsubscribe(workspaceId: string, emailLower: string, at: Date, _reason?: string, asOf?: Date): Promise<Contact | null> {
    const filter: Filter = { workspaceId, emailLower, status: "SUBSCRIBED" };
    if (asOf) filter.$or = [{ statusChangedAt: { $exists: false } }, { statusChangedAt: { $lte: asOf } }];
    return this.contacts.findOneAndUpdate(filter, { $set: { status: "UNSUBSCRIBED", updatedAt: at, statusChangedAt: at } }, { returnDocument: "after" });
  }

  private filter(workspaceId: string, query: ContactQuery): Filter {
    const filter: Filter = { workspaceId };
    if (query.status) filter.status = query.status;
    if (query.search) {
      const $regex = escapeRegex(query.search);
      filter.$or = ["emailLower", "firstName", "lastName"].map((field) => ({ [field]: { $regex, $options: "i" } }));
    }
    if (query.filter) filter.$and = [query.filter];
    return filter;
  }
}
