import { DuplicateKeyError, type Collection, type Filter, type Store } from "@mailroom/store/port.js";
import type { Suppression, SuppressionReason } from "@mailroom/records/model.js";
import type { SuppressionPageQuery, SuppressionRepository } from "@mailroom/records/ports.js";
import { ERASED_KEY_PREFIX } from "../domain/suppression.js";
import { withoutId, type Stored } from "@mailroom/records/documents.js";

/** Reasons a stronger one (a bounce, a complaint) replaces. */
const WEAK_REASONS: SuppressionReason[] = ["unsubscribed", "manual", "imported"];

export class SuppressionStore implements SuppressionRepository {
  private constructor(private readonly suppressions: Collection<Stored<Suppression>>) {}

  static async open(store: Store): Promise<SuppressionStore> {
    // No secondary index: the _id is "<workspaceId>:<key>" (scopedId), so it is unique per
    // workspace and key by itself, and every query here reads _id ranges or ids. A unique
    // (workspaceId, emailLower) index repeated that at a cost: in the embedded store its
    // check and entry made an import's insert several times slower (25,500 against 216,000
    // documents/s alone, batches of 5,000). Stores that have it keep it (still correct).
    return new SuppressionStore(store.collection<Stored<Suppression>>("suppressions"));
  }

  async ensure(suppression: Suppression): Promise<boolean> {
    const doc = stripUndefined(suppression);
    try {
      const res = await this.suppressions.updateOne({ _id: suppression._id }, { $setOnInsert: withoutId(doc) }, { upsert: true });
      return Boolean(res.upsertedId);
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  async ensureMany(suppressions: Suppression[]): Promise<Suppression[]> {
    if (!suppressions.length) return [];
    // The caller looked them up (Suppressions.addMany): most are missing, so they are written
    // at once, and only a batch that meets an existing key goes one by one.
    const missing = [...new Map(suppressions.map((s) => [s._id, stripUndefined(s) as Stored<Suppression>])).values()];
    try {
      // One write for the batch (one transaction in the embedded store).
      await this.suppressions.insertMany(missing);
      return missing;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    // Another writer got some in first: each on its own.
    const inserted: Suppression[] = [];
    for (const s of missing) if (await this.ensure(s)) inserted.push(s);
    return inserted;
  }

  async strengthen(id: string, reason: SuppressionReason, detail: string): Promise<void> {
    await this.suppressions.updateOne({ _id: id, reason: { $in: WEAK_REASONS } }, { $set: { reason, detail } });
  }

  async setSourceIfMissing(id: string, source: string): Promise<void> {
    await this.suppressions.updateOne({ _id: id, source: { $exists: false } }, { $set: { source } });
  }

  find(id: string): Promise<Suppression | null> {
    return this.suppressions.findOne({ _id: id });
  }

  findMany(workspaceId: string, ids: string[]): Promise<Suppression[]> {
    return this.suppressions.find({ _id: { $in: ids }, workspaceId });
  }

  async hasErased(workspaceId: string): Promise<boolean> {
    const scope = `${workspaceId}:${ERASED_KEY_PREFIX}`;
    return (await this.suppressions.findOne({ _id: { $gte: scope, $lt: `${workspaceId}:${nextPrefix(ERASED_KEY_PREFIX)}` } }, { projection: { _id: 1 } })) !== null;
  }

  async remove(id: string, reason?: SuppressionReason, opts: { unless?: SuppressionReason } = {}): Promise<Suppression | null> {
    const found = await this.suppressions.findOne({ _id: id });
    if (!found || (reason && found.reason !== reason) || (opts.unless && found.reason === opts.unless)) return null;
    // Conditional on the reason read: a complaint arriving meanwhile is not removed unforced.
    const { deletedCount } = await this.suppressions.deleteOne({ _id: id, reason: found.reason });
    return deletedCount ? found : null;
  }

  page(workspaceId: string, opts: SuppressionPageQuery): Promise<Suppression[]> {
    const scope = `${workspaceId}:`;
    const and: Filter[] = [
      // The workspace's key range: the embedded store walks the _id tree from the cursor.
      { workspaceId, _id: { $gt: scope, $lt: `${workspaceId};` } },
      // Erased addresses are suppressed by a hashed key and never listed.
      { $nor: [{ _id: { $gte: `${scope}${ERASED_KEY_PREFIX}`, $lt: `${scope}${nextPrefix(ERASED_KEY_PREFIX)}` } }] },
    ];
    if (opts.after) and.push({ _id: { $gt: opts.after } });
    if (opts.prefix) and.push({ _id: { $gte: `${scope}${opts.prefix}`, $lt: `${scope}${nextPrefix(opts.prefix)}` } });
    if (opts.reason) and.push({ reason: opts.reason });
    if (opts.since) and.push({ createdAt: { $gte: opts.since } });
    return this.suppressions.find({ $and: and }, { sort: { _id: 1 }, limit: opts.limit });
  }
}

/** The smallest string greater than every string starting with `prefix`. */
function nextPrefix(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** The store refuses `undefined` values. (The record itself when it has none: an import's batch holds thousands.) */
function stripUndefined<T extends object>(record: T): T {
  let clean = true;
  for (const key in record) if (record[key] === undefined) clean = false;
  if (clean) return record;
  const out: Record<string, unknown> = {};
  for (const key in record) if (record[key] !== undefined) out[key] = record[key];
  return out as T;
}
