import type { Collection, Store } from "@mailroom/store/port.js";
import type { Segment, SegmentRepository } from "@mailroom/records/audience-ports.js";
import { asDoc, type Stored } from "@mailroom/records/documents.js";

/**
 * The stored form: the filter as JSON text, because its operators (`$and`, `$engagement`, …)
 * would be field names starting with `$`, which MongoDB and nedb refuse in documents.
 */
type SegmentDoc = Omit<Segment, "filter"> & { filter: string };

const toDoc = (s: Segment): Stored<SegmentDoc> => asDoc({ ...s, filter: JSON.stringify(s.filter) });
const fromDoc = (d: SegmentDoc | null): Segment | null => (d ? { ...d, filter: JSON.parse(d.filter) as unknown } : null);

/** Collection `segments`: `{ _id: "seg_…", workspaceId, name, filter (JSON text), createdAt, updatedAt }`. */
export class SegmentStore implements SegmentRepository {
  private constructor(private readonly segments: Collection<Stored<SegmentDoc>>) {}

  static async open(store: Store): Promise<SegmentStore> {
    const segments = store.collection<Stored<SegmentDoc>>("segments");
    // Lists in id order per workspace.
    await segments.createIndex({ keys: { workspaceId: 1, _id: 1 } });
    return new SegmentStore(segments);
  }

  async insert(segment: Segment): Promise<void> {
    await this.segments.insertOne(toDoc(segment));
  }

  async find(workspaceId: string, id: string): Promise<Segment | null> {
    return fromDoc(await this.segments.findOne({ _id: id, workspaceId }));
  }

  async page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Segment[]> {
    const filter: Record<string, unknown> = { workspaceId };
    if (opts.after) filter._id = { $gt: opts.after };
    return (await this.segments.find(filter, { sort: { _id: 1 }, limit: opts.limit })).map((d) => fromDoc(d)!);
  }

  async update(workspaceId: string, id: string, changes: Partial<Pick<Segment, "name" | "filter" | "updatedAt">>): Promise<Segment | null> {
    const $set: Record<string, unknown> = { ...changes };
    if (changes.filter !== undefined) $set.filter = JSON.stringify(changes.filter);
    return fromDoc(await this.segments.findOneAndUpdate({ _id: id, workspaceId }, { $set }, { returnDocument: "after" }));
  }

  async delete(workspaceId: string, id: string): Promise<boolean> {
    return (await this.segments.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }
}
