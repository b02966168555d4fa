import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import type { Template, TemplateKind, TemplateStatus, TemplateVersion } from "@mailroom/records/model.js";
import type { TemplateRepository } from "@mailroom/records/ports.js";
import { asDoc, insertUnique, type Stored } from "@mailroom/records/documents.js";

export class TemplateStore implements TemplateRepository {
  private constructor(
    private readonly templates: Collection<Stored<Template>>,
    private readonly history: Collection<Stored<TemplateVersion>>,
  ) {}

  static async open(store: Store): Promise<TemplateStore> {
    const templates = store.collection<Stored<Template>>("templates");
    const history = store.collection<Stored<TemplateVersion>>("template_versions");
    await Promise.all([
      templates.createIndex({ keys: { workspaceId: 1, name: 1 }, unique: true }),
      templates.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
      history.createIndex({ keys: { workspaceId: 1, templateId: 1, version: -1 } }),
    ]);
    return new TemplateStore(templates, history);
  }

  async addVersion(version: TemplateVersion): Promise<void> {
    // The id is template and version: saving the same version again (a retry) keeps one copy.
    await insertUnique(this.history, asDoc(version));
  }

  versions(workspaceId: string, templateId: string, limit: number): Promise<TemplateVersion[]> {
    return this.history.find({ workspaceId, templateId }, { sort: { version: -1 }, limit });
  }

  findVersion(workspaceId: string, templateId: string, version: number): Promise<TemplateVersion | null> {
    return this.history.findOne({ workspaceId, templateId, version });
  }

  insert(template: Template): Promise<boolean> {
    return insertUnique(this.templates, asDoc(template));
  }

  findByName(workspaceId: string, name: string): Promise<Template | null> {
    return this.templates.findOne({ workspaceId, name });
  }

  findById(workspaceId: string, id: string): Promise<Template | null> {
    return this.templates.findOne({ _id: id, workspaceId });
  }

  update(workspaceId: string, id: string, changes: Partial<Omit<Template, "_id" | "workspaceId" | "name" | "createdAt">>): Promise<Template | null> {
    return this.templates.findOneAndUpdate({ _id: id, workspaceId }, { $set: changes }, { returnDocument: "after" });
  }

  /** The template and its saved versions (the versions first: a crash between leaves the template, which a retry deletes). */
  async delete(workspaceId: string, id: string): Promise<void> {
    await this.history.deleteMany({ workspaceId, templateId: id });
    await this.templates.deleteOne({ _id: id, workspaceId });
  }

  async usersOf(workspaceId: string, name: string): Promise<Template[]> {
    // A template naming a layout or rendering a snippet is saved with liquid: true.
    const liquid = await this.templates.find({ workspaceId, liquid: true }, { sort: { name: 1 } });
    return liquid.filter((t) => t.name !== name && (t.layout === name || (t.snippets ?? []).includes(name)));
  }

  page(workspaceId: string, opts: { after?: string; limit: number; status?: TemplateStatus; newestFirst?: boolean; kind?: TemplateKind }): Promise<Template[]> {
    const filter: Filter = { workspaceId };
    // Templates made before kinds have none: they are of kind "template".
    if (opts.kind === "template") filter.kind = { $nin: ["layout", "snippet"] };
    else if (opts.kind) filter.kind = opts.kind;
    // Templates made before statuses have none: they are ACTIVE.
    if (opts.status === "ACTIVE") filter.$or = [{ status: "ACTIVE" }, { status: { $exists: false } }];
    else if (opts.status) filter.status = opts.status;
    if (opts.after) filter._id = { [opts.newestFirst ? "$lt" : "$gt"]: opts.after };
    return this.templates.find(filter, { sort: { _id: opts.newestFirst ? -1 : 1 }, limit: opts.limit });
  }
}
