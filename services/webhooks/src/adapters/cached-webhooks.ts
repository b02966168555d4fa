import { LRUCache } from "lru-cache";
import type { Webhook } from "../domain/model.js";
import type { WebhookChanges, WebhookStore } from "../domain/ports.js";

/** Workspaces (and webhooks) whose lookups are remembered at once. */
const CACHE_MAX = 10_000;

/**
 * A WebhookStore that remembers each workspace's webhook list (the dispatcher reads it for
 * every event) and each webhook by id (the outbox reads it for every attempt). Every
 * change made through it drops the entries it touches at once and is announced through
 * `announce` (other processes call `forget`), so changes are seen at once everywhere, and
 * within `ttlMs` should an announcement be lost. A lookup in flight when a change lands is
 * discarded rather than cached (lru-cache aborts it). `fresh` reads bypass the cache.
 */
export class CachedWebhookStore implements WebhookStore {
  private readonly byWorkspace: LRUCache<string, Webhook[]>;
  private readonly byId: LRUCache<string, { webhook: Webhook | null }>;

  constructor(
    private readonly inner: WebhookStore,
    ttlMs: number,
    private readonly announce: (change: { workspaceId?: string; webhookId?: string }) => void = () => undefined,
  ) {
    // ttl 0 would mean "forever" to lru-cache: a one-millisecond ttl is as good as no cache.
    const ttl = Math.max(1, ttlMs);
    this.byWorkspace = new LRUCache<string, Webhook[]>({ max: CACHE_MAX, ttl, fetchMethod: (workspaceId) => inner.list(workspaceId) });
    this.byId = new LRUCache<string, { webhook: Webhook | null }>({
      max: CACHE_MAX,
      ttl,
      fetchMethod: async (id) => ({ webhook: await inner.findById(id) }),
    });
  }

  /** Drops what a change touched (a workspace's list, a webhook); neither known → everything. */
  forget(change: { workspaceId?: string; webhookId?: string }): void {
    if (change.workspaceId) this.byWorkspace.delete(change.workspaceId);
    else this.byWorkspace.clear();
    if (change.webhookId) this.byId.delete(change.webhookId);
  }

  private changed(webhook: Pick<Webhook, "id" | "workspaceId"> | null | undefined, workspaceId?: string, id?: string): void {
    const change = { workspaceId: webhook?.workspaceId ?? workspaceId, webhookId: webhook?.id ?? id };
    this.forget(change);
    this.announce(change);
  }

  async list(workspaceId: string): Promise<Webhook[]> {
    return (await this.byWorkspace.fetch(workspaceId)) ?? this.inner.list(workspaceId);
  }

  listFresh(workspaceId: string): Promise<Webhook[]> {
    return this.inner.list(workspaceId);
  }

  async findById(id: string, fresh = false): Promise<Webhook | null> {
    if (fresh) {
      this.byId.delete(id);
      return this.inner.findById(id);
    }
    const entry = await this.byId.fetch(id);
    return entry ? entry.webhook : this.inner.findById(id);
  }

  find(workspaceId: string, id: string): Promise<Webhook | null> {
    // API reads go to the store: a caller sees exactly what it just wrote (and the counters).
    return this.inner.find(workspaceId, id);
  }

  async insert(webhook: Webhook): Promise<void> {
    await this.inner.insert(webhook);
    this.changed(webhook);
  }

  async update(workspaceId: string, id: string, changes: WebhookChanges, at: Date): Promise<Webhook | null> {
    const updated = await this.inner.update(workspaceId, id, changes, at);
    this.changed(updated, workspaceId, id);
    return updated;
  }

  async delete(workspaceId: string, id: string): Promise<Webhook | null> {
    const deleted = await this.inner.delete(workspaceId, id);
    this.changed(deleted, workspaceId, id);
    return deleted;
  }

  recordSuccess(id: string): Promise<void> {
    return this.inner.recordSuccess(id);
  }

  recordFailure(id: string, at: Date): Promise<Webhook | null> {
    return this.inner.recordFailure(id, at);
  }

  async pause(id: string, reason: string, at: Date): Promise<boolean> {
    const paused = await this.inner.pause(id, reason, at);
    // The workspace is not always at hand: without it every list is dropped (pauses are rare).
    this.changed(this.byId.get(id)?.webhook, undefined, id);
    return paused;
  }
}
