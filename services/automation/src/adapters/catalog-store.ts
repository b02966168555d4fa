import { LRUCache } from "lru-cache";
import type { Collection, Store } from "@mailroom/store/port.js";
import type { AutomationRepository } from "../domain/automations.js";
import type { Automation, AutomationStatus, Definition, TriggerType } from "../domain/model.js";
import type { AutomationCatalog } from "../domain/ports.js";

/*
 * The automation catalog's collections:
 * - `automations`: one document per automation, its current version's definition inline;
 * - `automation_versions`: every version's definition (`_id` `<automation id>:<version>`),
 *   written once and never changed, which runs in progress read.
 * Definitions are kept as JSON text: filters hold keys such as `$and` and
 * `properties.plan` that are not valid field names in a stored document.
 */

type DefinitionText = {
  triggerJson: string;
  stepsJson: string;
  reentryJson: string;
};

type AutomationDoc = DefinitionText & {
  _id: string;
  workspaceId: string;
  name: string;
  status: AutomationStatus;
  version: number;
  /** The trigger's type (enrolment selects by it). */
  triggerType: TriggerType;
  createdAt: Date;
  updatedAt: Date;
  /** Set by a delete: the automation is gone for the API, its versions stay for the runs' history. */
  deletedAt?: Date;
};

type VersionDoc = DefinitionText & { _id: string; workspaceId: string; automationId: string; version: number; name: string; createdAt: Date };

const textOf = (d: Definition): DefinitionText => ({
  triggerJson: JSON.stringify(d.trigger),
  stepsJson: JSON.stringify(d.steps),
  reentryJson: JSON.stringify(d.reentry),
});

const definitionOf = (t: DefinitionText): Definition => ({
  trigger: JSON.parse(t.triggerJson) as Definition["trigger"],
  steps: JSON.parse(t.stepsJson) as Definition["steps"],
  reentry: JSON.parse(t.reentryJson) as Definition["reentry"],
});

function toDoc(a: Automation): AutomationDoc {
  return {
    _id: a.id,
    workspaceId: a.workspaceId,
    name: a.name,
    status: a.status,
    version: a.version,
    triggerType: a.trigger.type,
    ...textOf(a),
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
  };
}

function toAutomation(doc: AutomationDoc): Automation {
  return {
    id: doc._id,
    workspaceId: doc.workspaceId,
    name: doc.name,
    status: doc.status,
    version: doc.version,
    ...definitionOf(doc),
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

const versionKey = (automationId: string, version: number) => `${automationId}:${version}`;

export interface CatalogStoreOptions {
  /** How long the list of a workspace's active automations of one trigger type is reused (enrolment asks per event). */
  activeCacheMs?: number;
  /** Version definitions kept in memory (they never change). */
  versionCacheSize?: number;
}

/**
 * The catalog's store: the repository of the use cases and the run engine's read side
 * (AutomationCatalog). Changes made through this object clear its own caches at once; other
 * processes' changes show within `activeCacheMs`.
 */
export class StoreCatalog implements AutomationRepository, AutomationCatalog {
  private readonly automations: Collection<AutomationDoc>;
  private readonly versions: Collection<VersionDoc>;
  private readonly versionCache: LRUCache<string, Definition>;
  private readonly activeCache: LRUCache<string, Promise<Automation[]>>;

  constructor(store: Store, opts: CatalogStoreOptions = {}) {
    this.automations = store.collection<AutomationDoc>("automations");
    this.versions = store.collection<VersionDoc>("automation_versions");
    this.versionCache = new LRUCache({ max: opts.versionCacheSize ?? 10_000 });
    this.activeCache = new LRUCache({ max: 10_000, ttl: Math.max(1, opts.activeCacheMs ?? 1_000) });
  }

  async init(): Promise<void> {
    // Listing: a workspace's automations newest first (ids are time-ordered ULIDs).
    await this.automations.createIndex({ keys: { workspaceId: 1, _id: -1 } });
    // Enrolment: a workspace's automations of one trigger type (then filtered by status).
    await this.automations.createIndex({ keys: { workspaceId: 1, triggerType: 1 } });
  }

  // --- AutomationRepository ---------------------------------------------------------------

  async insert(a: Automation): Promise<void> {
    await this.automations.insertOne(toDoc(a));
    await this.writeVersion(a);
    this.changed(a.workspaceId);
  }

  async find(workspaceId: string, id: string): Promise<Automation | null> {
    const doc = await this.automations.findOne({ _id: id, workspaceId });
    return doc && !doc.deletedAt ? toAutomation(doc) : null;
  }

  async list(workspaceId: string, q: { limit: number; before?: string }): Promise<Automation[]> {
    const filter: Record<string, unknown> = { workspaceId, deletedAt: { $exists: false } };
    if (q.before) filter._id = { $lt: q.before };
    const docs = await this.automations.find(filter, { sort: { _id: -1 }, limit: q.limit });
    return docs.map(toAutomation);
  }

  async saveVersion(next: Automation, expectedVersion: number): Promise<boolean> {
    // The version being replaced is written first if a crash left it only inline (see writeVersion).
    const current = await this.automations.findOne({ _id: next.id, workspaceId: next.workspaceId });
    if (current && current.version === expectedVersion) await this.writeVersion(toAutomation(current));
    const { _id: _ignored, createdAt: _c, ...set } = toDoc(next);
    const res = await this.automations.updateOne(
      { _id: next.id, workspaceId: next.workspaceId, version: expectedVersion, deletedAt: { $exists: false } },
      { $set: set },
    );
    if (res.matchedCount !== 1) return false;
    await this.writeVersion(next);
    this.changed(next.workspaceId);
    return true;
  }

  async setStatus(workspaceId: string, id: string, from: readonly AutomationStatus[], to: AutomationStatus, at: Date): Promise<Automation | null> {
    const before = await this.automations.findOneAndUpdate(
      { _id: id, workspaceId, status: { $in: [...from] }, deletedAt: { $exists: false } },
      { $set: { status: to, updatedAt: at } },
      { returnDocument: "before" },
    );
    this.changed(workspaceId);
    return before ? toAutomation(before) : null;
  }

  async markDeleted(workspaceId: string, id: string, at: Date): Promise<Automation | null> {
    const before = await this.automations.findOneAndUpdate(
      { _id: id, workspaceId, deletedAt: { $exists: false } },
      { $set: { deletedAt: at, updatedAt: at } },
      { returnDocument: "before" },
    );
    this.changed(workspaceId);
    return before ? toAutomation(before) : null;
  }

  async definitionAt(workspaceId: string, id: string, version: number): Promise<Definition | null> {
    return (await this.version(workspaceId, id, version))?.definition ?? null;
  }

  // --- AutomationCatalog ------------------------------------------------------------------

  async version(workspaceId: string, automationId: string, version: number): Promise<{ definition: Definition; status: AutomationStatus; deleted: boolean } | null> {
    const doc = await this.automations.findOne({ _id: automationId, workspaceId }, { projection: { status: 1, deletedAt: 1, version: 1 } });
    if (!doc || version < 1 || version > doc.version) return null;
    const state = { status: doc.status, deleted: doc.deletedAt !== undefined };
    const key = versionKey(automationId, version);
    const cached = this.versionCache.get(key);
    if (cached) return { definition: cached, ...state };
    const stored = await this.versions.findOne({ _id: key, workspaceId });
    let definition: Definition | undefined = stored ? definitionOf(stored) : undefined;
    if (!definition && version === doc.version) {
      // A crash between the two writes of a version: the automation holds it inline.
      const full = await this.automations.findOne({ _id: automationId, workspaceId, version });
      definition = full ? definitionOf(full) : undefined;
    }
    if (!definition) return null;
    this.versionCache.set(key, definition);
    return { definition, ...state };
  }

  activeWithTrigger(workspaceId: string, type: TriggerType): Promise<Automation[]> {
    const key = `${workspaceId}\n${type}`;
    let hit = this.activeCache.get(key);
    if (!hit) {
      hit = this.automations
        .find({ workspaceId, triggerType: type })
        .then((docs) => docs.filter((d) => d.status === "ACTIVE" && !d.deletedAt).map(toAutomation));
      this.activeCache.set(key, hit);
      // A failed read is not reused.
      hit.catch(() => this.activeCache.delete(key));
    }
    return hit;
  }

  // --- helpers ----------------------------------------------------------------------------

  /**
   * A version's definition under its own key. Idempotent ($setOnInsert): a version, once
   * written, never changes, so a repeated write (after a crash, or by saveVersion's catch-up)
   * keeps the first.
   */
  private async writeVersion(a: Automation): Promise<void> {
    const { _id: _ignored, ...fields } = { _id: "", workspaceId: a.workspaceId, automationId: a.id, version: a.version, name: a.name, createdAt: a.updatedAt, ...textOf(a) };
    await this.versions.updateOne({ _id: versionKey(a.id, a.version) }, { $setOnInsert: fields }, { upsert: true });
  }

  /** Enrolment must see a change at once in this process. */
  private changed(workspaceId: string): void {
    for (const key of this.activeCache.keys()) if (key.startsWith(`${workspaceId}\n`)) this.activeCache.delete(key);
  }
}
