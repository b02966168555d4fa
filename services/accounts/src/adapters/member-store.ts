import type { Collection, Store } from "@mailroom/store/port.js";
import { newId } from "@mailroom/kit/ids.js";
import type { Member } from "@mailroom/records/model.js";
import type { MemberRepository } from "@mailroom/records/ports.js";
import type { TeamMemberRepository } from "../domain/team-ports.js";
import { asDoc, ensureDoc, insertUnique, withoutId, type Stored } from "@mailroom/records/documents.js";

/** The members collection: the test-send list (MemberRepository) and the team (TeamMemberRepository). */
export class MemberStore implements MemberRepository, TeamMemberRepository {
  private constructor(private readonly members: Collection<Stored<Member>>) {}

  static async open(store: Store): Promise<MemberStore> {
    const members = store.collection<Stored<Member>>("members");
    await Promise.all([
      members.createIndex({ keys: { workspaceId: 1 } }),
      members.createIndex({ keys: { workspaceId: 1, publicId: 1 } }),
      members.createIndex({ keys: { email: 1 } }),
    ]);
    const opened = new MemberStore(members);
    await opened.giveRoles();
    return opened;
  }

  /**
   * Members stored before roles (test-send recipients) become ACTIVE members with an id: the
   * oldest of a workspace that has no OWNER becomes its OWNER, the others EDITORs. Conditional
   * per document, so processes opening the store together agree.
   */
  private async giveRoles(): Promise<void> {
    const legacy = await this.members.find({ publicId: { $exists: false } }, { sort: { createdAt: 1, _id: 1 } });
    for (const m of legacy) {
      const owner = (await this.countActiveOwners(m.workspaceId)) === 0;
      await this.members.updateOne(
        { _id: m._id, publicId: { $exists: false } },
        { $set: { publicId: newId("mbr"), role: owner ? "OWNER" : "EDITOR", status: "ACTIVE", lastSignInAt: null } },
      );
    }
  }

  ensure(member: Member): Promise<void> {
    return ensureDoc(this.members, { _id: member._id }, { $setOnInsert: withoutId(member) });
  }

  async remove(id: string): Promise<void> {
    await this.members.deleteOne({ _id: id });
  }

  async removeMember(workspaceId: string, publicId: string): Promise<boolean> {
    return (await this.members.deleteOne({ workspaceId, publicId })).deletedCount > 0;
  }

  list(workspaceId: string, limit = 10_000): Promise<Member[]> {
    return this.members.find({ workspaceId }, { sort: { _id: 1 }, limit });
  }

  findByPublicId(workspaceId: string, publicId: string): Promise<Member | null> {
    return this.members.findOne({ workspaceId, publicId });
  }

  findByEmail(workspaceId: string, email: string): Promise<Member | null> {
    return this.members.findOne({ workspaceId, email });
  }

  listByEmail(email: string): Promise<Member[]> {
    return this.members.find({ email }, { sort: { createdAt: 1, publicId: 1 }, limit: 1_000 });
  }

  insert(member: Member): Promise<boolean> {
    return insertUnique(this.members, asDoc(member));
  }

  update(workspaceId: string, publicId: string, set: Partial<Omit<Member, "_id" | "workspaceId">>): Promise<Member | null> {
    return this.members.findOneAndUpdate({ workspaceId, publicId }, { $set: set }, { returnDocument: "after" });
  }

  countActiveOwners(workspaceId: string): Promise<number> {
    return this.members.countDocuments({ workspaceId, role: "OWNER", status: "ACTIVE" });
  }
}
