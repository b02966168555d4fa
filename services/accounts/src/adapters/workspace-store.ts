import type { Collection, Store } from "@mailroom/store/port.js";
import type { Workspace } from "@mailroom/records/model.js";
import type { WorkspaceRepository } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export class WorkspaceStore implements WorkspaceRepository {
  private constructor(private readonly workspaces: Collection<Stored<Workspace>>) {}

  static async open(store: Store): Promise<WorkspaceStore> {
    return new WorkspaceStore(store.collection<Stored<Workspace>>("workspaces"));
  }

  insert(workspace: Workspace): Promise<boolean> {
    return insertUnique(this.workspaces, asDoc(workspace));
  }

  find(id: string): Promise<Workspace | null> {
    return this.workspaces.findOne({ _id: id });
  }

  update(id: string, changes: Partial<Omit<Workspace, "_id">>): Promise<Workspace | null> {
    return this.workspaces.findOneAndUpdate({ _id: id }, { $set: changes }, { returnDocument: "after" });
  }

  list(limit: number): Promise<Workspace[]> {
    return this.workspaces.find({}, { sort: { _id: 1 }, limit });
  }
}
