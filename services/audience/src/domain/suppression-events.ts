import { Announcer, suppressionEvents, type ChangeIntentRecorder, type DirectoryEventPublisher } from "@mailroom/records/change-events.js";
import type { Suppression, SuppressionReason } from "@mailroom/records/model.js";
import type { SuppressionPageQuery, SuppressionRepository } from "@mailroom/records/ports.js";
import type { Clock } from "@mailroom/records/validation.js";

/**
 * SUPPRESSION_CREATED / SUPPRESSION_DELETED (webhooks), emitted at the write like the
 * contact events (changes.ts): every path that adds or lifts a suppression (the API, an
 * import, the console, bounces, complaints, unsubscribes, a resubscribe) announces it without
 * knowing. Erased (hashed) entries are never announced: they name no address, and the
 * erasure's own plain-entry removal is quiet. Ids come from the entry and its creation time,
 * so announcing one write twice is one event.
 */
export class EmittingSuppressionStore implements SuppressionRepository {
  private readonly announcer: Announcer;

  constructor(
    private readonly inner: SuppressionRepository,
    publish: DirectoryEventPublisher,
    now: Clock,
    intend?: ChangeIntentRecorder,
  ) {
    this.announcer = new Announcer(publish, intend, now);
  }

  ensure(suppression: Suppression): Promise<boolean> {
    return this.announcer.around(
      { kind: "suppressions", workspaceId: suppression.workspaceId, creating: true, suppressions: [suppression] },
      () => this.inner.ensure(suppression),
      (created, at) => (created ? suppressionEvents("SUPPRESSION_CREATED", [suppression], at) : []),
    );
  }

  ensureMany(suppressions: Suppression[]): Promise<Suppression[]> {
    if (!suppressions.length) return this.inner.ensureMany(suppressions);
    const workspaceId = suppressions[0]!.workspaceId;
    return this.announcer.around(
      // By key (the _id after "<workspaceId>:"): an import's batch names thousands.
      { kind: "suppression_keys", workspaceId, keys: suppressions.map((s) => s._id.slice(workspaceId.length + 1)) },
      () => this.inner.ensureMany(suppressions),
      (inserted, at) => suppressionEvents("SUPPRESSION_CREATED", inserted, at),
    );
  }

  strengthen(id: string, reason: SuppressionReason, detail: string): Promise<void> {
    return this.inner.strengthen(id, reason, detail);
  }

  setSourceIfMissing(id: string, source: string): Promise<void> {
    return this.inner.setSourceIfMissing(id, source);
  }

  find(id: string): Promise<Suppression | null> {
    return this.inner.find(id);
  }

  findMany(workspaceId: string, ids: string[]): Promise<Suppression[]> {
    return this.inner.findMany(workspaceId, ids);
  }

  hasErased(workspaceId: string): Promise<boolean> {
    return this.inner.hasErased(workspaceId);
  }

  async remove(id: string, reason?: SuppressionReason, opts: { unless?: SuppressionReason; quiet?: boolean } = {}): Promise<Suppression | null> {
    if (opts.quiet) return this.inner.remove(id, reason, opts);
    // The intent names the entry as it stands, so a recovery can tell whether it went.
    const before = await this.inner.find(id);
    if (!before) return null;
    return this.announcer.around(
      { kind: "suppressions", workspaceId: before.workspaceId, creating: false, suppressions: [before] },
      () => this.inner.remove(id, reason, opts),
      (removed, at) => (removed ? suppressionEvents("SUPPRESSION_DELETED", [removed], at) : []),
    );
  }

  page(workspaceId: string, opts: SuppressionPageQuery): Promise<Suppression[]> {
    return this.inner.page(workspaceId, opts);
  }
}
