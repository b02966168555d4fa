import type { Collection, Store } from "@mailroom/store/port.js";
import type { Member } from "../domain/model.js";
import type { MemberRepository } from "../domain/ports.js";
import { ensureDoc, withoutId, type Stored } from "./documents.js";

export class MemberStore implements MemberRepository {
  private constructor(private readonly members: Collection<Stored<Member>>) {}

  static async open(store: Store): Promise<MemberStore> {
    const members = store.collection<Stored<Member>>("members");
    await members.createIndex({ keys: { workspaceId: 1 } });
    return new MemberStore(members);
  }

  ensure(member: Member): Promise<void> {
    return ensureDoc(this.members, { _id: member._id }, { $setOnInsert: withoutId(member) });
  }

  async remove(id: string): Promise<void> {
    await this.members.deleteOne({ _id: id });
  }

  list(workspaceId: string, limit: number): Promise<Member[]> {
    return this.members.find({ workspaceId }, { sort: { _id: 1 }, limit });
  }
}
