import { DuplicateKeyError, type Collection, type Doc, type Filter, type Store, type Update } from "@mailroom/store/port.js";
import { TopicNameTaken, type ContactChoices, type Topic, type TopicRepository } from "@mailroom/records/topic-ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

/** The part of a contact document topics read: `topics` holds its explicit choices only. */
type ContactDoc = Doc & { workspaceId: string; email: string; emailLower: string; topics?: Record<string, boolean> };

const CONTACT_PROJECTION = { _id: 1, email: 1, topics: 1 } as const;

const choicesOf = (doc: ContactDoc | null): ContactChoices | null =>
  doc && { _id: doc._id, email: doc.email, topics: doc.topics && typeof doc.topics === "object" ? doc.topics : {} };

/** Topics (collection `topics`) and contacts' choices (`topics.<topicId>` on `contacts`). */
export class TopicStore implements TopicRepository {
  private constructor(
    private readonly topics: Collection<Stored<Topic>>,
    private readonly contacts: Collection<ContactDoc>,
  ) {}

  static async open(store: Store): Promise<TopicStore> {
    const topics = store.collection<Stored<Topic>>("topics");
    await Promise.all([
      // Names are unique per workspace.
      topics.createIndex({ keys: { workspaceId: 1, name: 1 }, unique: true }),
      // Lists in id (creation) order.
      topics.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
    ]);
    // The contacts collection and its (workspaceId, _id) and (workspaceId, emailLower) indexes belong to ContactStore.
    return new TopicStore(topics, store.collection<ContactDoc>("contacts"));
  }

  insert(topic: Topic): Promise<boolean> {
    return insertUnique(this.topics, asDoc(topic));
  }

  find(workspaceId: string, id: string): Promise<Topic | null> {
    return this.topics.findOne({ _id: id, workspaceId });
  }

  async update(
    workspaceId: string, id: string, set: Partial<Pick<Topic, "name" | "description" | "defaultSubscription" | "updatedAt">>, unset: Array<"description">,
  ): Promise<Topic | null> {
    const update: Update = { $set: set };
    if (unset.length) update.$unset = Object.fromEntries(unset.map((k) => [k, ""]));
    try {
      return await this.topics.findOneAndUpdate({ _id: id, workspaceId }, update, { returnDocument: "after" });
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw new TopicNameTaken();
      throw err;
    }
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    return (await this.topics.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }

  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Topic[]> {
    const filter: Filter = { workspaceId };
    if (opts.after) filter._id = { $gt: opts.after };
    return this.topics.find(filter, { sort: { _id: 1 }, limit: opts.limit });
  }

  async forgetChoices(workspaceId: string, topicId: string): Promise<number> {
    const path = `topics.${topicId}`;
    return (await this.contacts.updateMany({ workspaceId, [path]: { $exists: true } }, { $unset: { [path]: "" } })).modifiedCount;
  }

  async findContact(workspaceId: string, ref: { id: string } | { emailLower: string }): Promise<ContactChoices | null> {
    const filter: Filter = "id" in ref ? { _id: ref.id, workspaceId } : { workspaceId, emailLower: ref.emailLower };
    return choicesOf(await this.contacts.findOne(filter, { projection: CONTACT_PROJECTION }));
  }

  async setChoices(workspaceId: string, contactId: string, choices: Record<string, boolean>): Promise<ContactChoices | null> {
    const $set = Object.fromEntries(Object.entries(choices).map(([id, subscribed]) => [`topics.${id}`, subscribed]));
    return choicesOf(await this.contacts.findOneAndUpdate({ _id: contactId, workspaceId }, { $set }, { returnDocument: "after" }));
  }
}
