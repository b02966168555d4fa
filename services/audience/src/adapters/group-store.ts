import type { Collection, Store, Update } from "@mailroom/store/port.js";
import type { Group, GroupMembershipRepository, GroupRepository, MemberContact } from "@mailroom/records/group-ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export const GROUPS_COLLECTION = "groups";

/** Groups (collection `groups`): one per (workspaceId, publicId). */
export class GroupStore implements GroupRepository {
  private constructor(private readonly groups: Collection<Stored<Group>>) {}

  static async open(store: Store): Promise<GroupStore> {
    const groups = store.collection<Stored<Group>>(GROUPS_COLLECTION);
    await Promise.all([
      // publicId is unique per workspace (a duplicate is 409 group_public_id_taken); lookups by publicId.
      groups.createIndex({ keys: { workspaceId: 1, publicId: 1 }, unique: true }),
      // Cursor pages in id order.
      groups.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
    ]);
    return new GroupStore(groups);
  }

  insert(group: Group): Promise<boolean> {
    return insertUnique(this.groups, asDoc(group));
  }

  findById(workspaceId: string, id: string): Promise<Group | null> {
    return this.groups.findOne({ _id: id, workspaceId });
  }

  findByPublicId(workspaceId: string, publicId: string): Promise<Group | null> {
    return this.groups.findOne({ workspaceId, publicId });
  }

  update(workspaceId: string, id: string, set: Partial<Pick<Group, "displayName" | "traits" | "updatedAt">>, unset: Array<"displayName" | "traits">): Promise<Group | null> {
    const update: Update = { $set: set };
    if (unset.length) update.$unset = Object.fromEntries(unset.map((field) => [field, ""]));
    return this.groups.findOneAndUpdate({ _id: id, workspaceId }, update, { returnDocument: "after" });
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    return (await this.groups.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }

  findMany(workspaceId: string, ids: string[]): Promise<Group[]> {
    if (!ids.length) return Promise.resolve([]);
    return this.groups.find({ _id: { $in: ids }, workspaceId });
  }

  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Group[]> {
    return this.groups.find(opts.after ? { workspaceId, _id: { $gt: opts.after } } : { workspaceId }, { sort: { _id: 1 }, limit: opts.limit });
  }
}

/**
 * Memberships on the contact documents (DESIGN §9.4's shared layout): `groups` holds the group
 * ids (multikey index workspaceId + groups + _id: a group's contacts are one index range in
 * contact-id order) and `groupsAddedAt.<groupId>` when the contact first joined.
 */
export class GroupMembershipStore implements GroupMembershipRepository {
  private constructor(private readonly contacts: Collection<Stored<MemberContact>>) {}

  static async open(store: Store): Promise<GroupMembershipStore> {
    const contacts = store.collection<Stored<MemberContact>>("contacts");
    await contacts.createIndex({ keys: { workspaceId: 1, groups: 1, _id: 1 } });
    return new GroupMembershipStore(contacts);
  }

  async add(group: Group, contactId: string, at: Date): Promise<{ addedAt: Date; added: boolean; contact: MemberContact } | null> {
    const { _id: groupId, workspaceId } = group;
    // Only a non-member is changed (atomic): adding a member again keeps its first addedAt.
    const added = await this.contacts.findOneAndUpdate(
      { _id: contactId, workspaceId, groups: { $ne: groupId } },
      { $addToSet: { groups: groupId }, $set: { [`groupsAddedAt.${groupId}`]: at } },
      { returnDocument: "after" },
    );
    if (added) return { addedAt: at, added: true, contact: added };
    const contact = await this.contacts.findOne({ _id: contactId, workspaceId });
    if (!contact) return null;
    // A member (or one that joined between the two reads): its stored addedAt.
    const addedAt = contact.groupsAddedAt?.[groupId];
    return { addedAt: addedAt ? new Date(addedAt) : at, added: false, contact };
  }

  async remove(group: Group, contactId: string): Promise<{ removed: boolean; addedAt?: Date; contact: MemberContact } | null> {
    const { _id: groupId, workspaceId } = group;
    const before = await this.contacts.findOneAndUpdate(
      { _id: contactId, workspaceId, groups: groupId },
      { $pull: { groups: groupId }, $unset: { [`groupsAddedAt.${groupId}`]: "" } },
      { returnDocument: "before" },
    );
    if (before) {
      const addedAt = before.groupsAddedAt?.[groupId];
      const groups = (before.groups ?? []).filter((g) => g !== groupId);
      const groupsAddedAt = { ...before.groupsAddedAt };
      delete groupsAddedAt[groupId];
      return { removed: true, ...(addedAt ? { addedAt: new Date(addedAt) } : {}), contact: { ...before, groups, groupsAddedAt } };
    }
    const contact = await this.contacts.findOne({ _id: contactId, workspaceId });
    return contact ? { removed: false, contact } : null;
  }

  async ofContact(workspaceId: string, contactId: string): Promise<Record<string, Date> | null> {
    const doc = await this.contacts.findOne({ _id: contactId, workspaceId }, { projection: { _id: 1, groups: 1, groupsAddedAt: 1 } });
    if (!doc) return null;
    const out: Record<string, Date> = {};
    for (const id of doc.groups ?? []) out[id] = new Date(doc.groupsAddedAt?.[id] ?? 0);
    return out;
  }

  async addedAt(workspaceId: string, groupId: string, contactId: string): Promise<Date | undefined> {
    const doc = await this.contacts.findOne({ _id: contactId, workspaceId, groups: groupId }, { projection: { _id: 1, groupsAddedAt: 1 } });
    const at = doc?.groupsAddedAt?.[groupId];
    return at ? new Date(at) : undefined;
  }

  async removeAll(workspaceId: string, groupId: string): Promise<number> {
    const result = await this.contacts.updateMany(
      { workspaceId, groups: groupId },
      { $pull: { groups: groupId }, $unset: { [`groupsAddedAt.${groupId}`]: "" } },
    );
    return result.modifiedCount;
  }

  async page(workspaceId: string, groupId: string, opts: { after?: string; limit: number }): Promise<Array<{ contactId: string; addedAt: Date }>> {
    const filter: Record<string, unknown> = { workspaceId, groups: groupId };
    if (opts.after) filter._id = { $gt: opts.after };
    const docs = await this.contacts.find(filter, { sort: { _id: 1 }, limit: opts.limit, projection: { _id: 1, groupsAddedAt: 1 } });
    return docs.map((d) => ({ contactId: d._id, addedAt: new Date(d.groupsAddedAt?.[groupId] ?? 0) }));
  }
}
