import { eventId, type DirectoryEvent, type DirectoryEventPublisher, type DirectoryEventType } from "./changes.js";
import type { Suppression, SuppressionReason } from "./model.js";
import type { SuppressionPageQuery, SuppressionRepository } from "./ports.js";
import { clientSuppression, ERASED_KEY_PREFIX } from "./suppression.js";
import type { Clock } from "./validation.js";

/**
 * SUPPRESSION_CREATED / SUPPRESSION_DELETED (webhooks), emitted at the write like the
 * contact events (changes.ts): every path that adds or lifts a suppression (the API, an
 * import, the console, bounces, complaints, unsubscribes, a resubscribe) announces it without
 * knowing. Erased (hashed) entries are never announced: they name no address, and the
 * erasure's own plain-entry removal is quiet. Ids come from the entry and its creation time,
 * so announcing one write twice is one event.
 */
export class EmittingSuppressionRepository implements SuppressionRepository {
  constructor(
    private readonly inner: SuppressionRepository,
    private readonly publish: DirectoryEventPublisher,
    private readonly now: Clock,
  ) {}

  async ensure(suppression: Suppression): Promise<boolean> {
    const created = await this.inner.ensure(suppression);
    if (created) await this.announce("SUPPRESSION_CREATED", [suppression]);
    return created;
  }

  async ensureMany(suppressions: Suppression[]): Promise<Suppression[]> {
    const inserted = await this.inner.ensureMany(suppressions);
    await this.announce("SUPPRESSION_CREATED", inserted);
    return inserted;
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

  async remove(id: string, reason?: SuppressionReason, opts: { unless?: SuppressionReason; quiet?: boolean } = {}): Promise<Suppression | null> {
    const removed = await this.inner.remove(id, reason, opts);
    if (removed && !opts.quiet) await this.announce("SUPPRESSION_DELETED", [removed]);
    return removed;
  }

  page(workspaceId: string, opts: SuppressionPageQuery): Promise<Suppression[]> {
    return this.inner.page(workspaceId, opts);
  }

  private async announce(type: DirectoryEventType, suppressions: Suppression[]): Promise<void> {
    const at = this.now();
    const events: DirectoryEvent[] = suppressions
      .filter((s) => !s.emailLower.startsWith(ERASED_KEY_PREFIX))
      .map((s) => ({
        id: eventId(type, s.workspaceId, s.emailLower, String(new Date(s.createdAt).getTime())),
        type,
        createdAt: at.toISOString(),
        workspaceId: s.workspaceId,
        data: { suppression: clientSuppression(s) },
      }));
    if (events.length) await this.publish(events);
  }
}
