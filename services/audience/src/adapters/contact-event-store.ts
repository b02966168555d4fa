import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import type { ContactEvent } from "@mailroom/records/model.js";
import type { ContactEventRepository } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export class ContactEventStore implements ContactEventRepository {
  private constructor(private readonly events: Collection<Stored<ContactEvent>>) {}

  static async open(store: Store): Promise<ContactEventStore> {
    const events = store.collection<Stored<ContactEvent>>("contact_events");
    await Promise.all([
      // Deduplication: one event per messageId per workspace.
      events.createIndex({ keys: { workspaceId: 1, messageId: 1 }, unique: true }),
      // One contact's events, newest first.
      events.createIndex({ keys: { workspaceId: 1, contactId: 1, _id: -1 } }),
    ]);
    return new ContactEventStore(events);
  }

  insert(event: ContactEvent): Promise<boolean> {
    return insertUnique(this.events, asDoc(event));
  }

  findByMessageId(workspaceId: string, messageId: string): Promise<ContactEvent | null> {
    return this.events.findOne({ workspaceId, messageId });
  }

  async deleteForContact(workspaceId: string, contactId: string, emailLower: string): Promise<number> {
    const sameAddress = { $regex: `^${emailLower.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, $options: "i" };
    const { deletedCount } = await this.events.deleteMany({ workspaceId, $or: [{ contactId }, { email: sameAddress }] });
    return deletedCount;
  }

  page(workspaceId: string, contactId: string, opts: { after?: string; limit: number }): Promise<ContactEvent[]> {
    const filter: Filter = { workspaceId, contactId };
    if (opts.after) filter._id = { $lt: opts.after };
    return this.events.find(filter, { sort: { _id: -1 }, limit: opts.limit });
  }
}
