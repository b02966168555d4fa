import { Code, ConnectError } from "@connectrpc/connect";
import type { CompiledMessage, CompiledTemplate } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { LRUCache } from "lru-cache";
import { decodeStoredContent, type ContentStore } from "@mailroom/pipeline/content-store.js";
import type { StoredContent } from "@mailroom/proto/events/v1/events_pb.js";
import { PermanentError, type Carried, type ContentSource } from "../domain/ports.js";
import { AttachmentParts } from "./attachment-parts.js";

/** A content source that hands out the renderer's compiled messages (what the merger takes). */
export interface CompiledMessageSource extends ContentSource {
  get(workspaceId: string, contentRef: string): Promise<CompiledMessage>;
  decode(workspaceId: string, contentRef: string, stored: Uint8Array): CompiledMessage;
}

/**
 * Reads compiled content from the content store (DESIGN §9.1), where the unit that accepted
 * the message wrote it before publishing any job: delivery never calls that unit back.
 * Content that is not there (never written, deleted once final, expired) will not appear
 * later: the delivery fails for good.
 */
export class StoreContentSource implements CompiledMessageSource {
  constructor(
    private readonly store: Pick<ContentStore, "getStored">,
    /** Attachments encoded once per content (DESIGN §9.5), reused by retries and other recipients. */
    private readonly parts = new AttachmentParts(64 * 1024 * 1024),
  ) {}

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage & { carried?: Carried }> {
    let stored: StoredContent | undefined;
    try {
      stored = await this.store.getStored(workspaceId, contentRef);
    } catch (err) {
      // contentKey refuses a ref or workspace that cannot name content: no retry helps.
      if (err instanceof Error && /cannot name content/.test(err.message)) throw new PermanentError(`content ${contentRef}: ${err.message}`);
      throw err;
    }
    if (!stored?.compiled) throw new PermanentError(`content ${contentRef}: not found in the content store`);
    return this.withCarried(workspaceId, contentRef, stored);
  }

  decode(workspaceId: string, contentRef: string, bytes: Uint8Array): CompiledMessage & { carried?: Carried } {
    let stored: StoredContent;
    try {
      stored = decodeStoredContent(bytes);
    } catch (err) {
      throw new PermanentError(`content ${contentRef} carried by the job does not decode: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!stored.compiled) throw new PermanentError(`content ${contentRef} carried by the job has no compiled message`);
    return this.withCarried(workspaceId, contentRef, stored);
  }

  private withCarried(workspaceId: string, contentRef: string, stored: StoredContent): CompiledMessage & { carried?: Carried } {
    const compiled = stored.compiled!;
    if (stored.rawMime.length > 0) {
      return Object.assign(compiled, { carried: { cc: [], headers: [], attachments: [], forwarded: { raw: stored.rawMime, envelopeFrom: stored.envelopeFrom } } });
    }
    if (stored.cc.length === 0 && stored.headers.length === 0 && stored.attachments.length === 0) return compiled;
    // The compiled message is this load's own object: what the email carries rides on it.
    const carried: Carried = {
      cc: stored.cc,
      headers: stored.headers.map((h) => ({ name: h.name, value: h.value })),
      attachments: this.parts.partsOf(workspaceId, contentRef, stored.attachments),
    };
    return Object.assign(compiled, { carried });
  }
}

/** NotFound / InvalidArgument / PermissionDenied will not change on retry; anything else may. */
export function asPermanentWhenFinal(err: unknown, what: string): unknown {
  if (err instanceof ConnectError && [Code.NotFound, Code.InvalidArgument, Code.PermissionDenied].includes(err.code)) {
    return new PermanentError(`${what}: ${err.rawMessage}`);
  }
  return err;
}

/** Bounds of the compiled-content cache. */
export interface ContentCacheLimits {
  /** Budget in (estimated) bytes, see compiledSize(). */
  maxBytes: number;
  /** At most this many entries whatever their size (default 256). */
  maxEntries?: number;
  /**
   * Which refs are worth keeping: by default every ref. The delivery process keeps only
   * broadcast content, merged for every contact; a transactional email's content is used
   * by one message (and its retries), so caching it only fills memory.
   */
  cacheable?: (contentRef: string) => boolean;
}

/** Content shared by many messages: a broadcast's. */
export const sharedContentRef = (contentRef: string) => contentRef.startsWith("broadcast:");

/**
 * A broadcast is compiled once and merged for every contact: keep compiled contents in an
 * LRU bounded by their estimated size in bytes and by a count of entries, keyed by
 * workspace too so tenants never share an entry; concurrent misses for one key load it
 * once (the cache's fetchMethod). Refs that are not `cacheable` go straight to the source.
 */
export class CachedContentSource implements CompiledMessageSource {
  private readonly cache: LRUCache<string, CompiledMessage, ContentKey>;
  private readonly cacheable: (contentRef: string) => boolean;

  constructor(
    private readonly inner: CompiledMessageSource,
    limits: number | ContentCacheLimits,
  ) {
    const { maxBytes, maxEntries = 256, cacheable = () => true } = typeof limits === "number" ? { maxBytes: limits } : limits;
    this.cacheable = cacheable;
    this.cache = new LRUCache<string, CompiledMessage, ContentKey>({
      max: Math.max(1, maxEntries),
      maxSize: maxBytes,
      // One entry bigger than the whole budget is not kept (it would evict everything else).
      sizeCalculation: compiledSize,
      fetchMethod: (_key, _stale, { context }) => this.inner.get(context.workspaceId, context.contentRef),
      // A load already started finishes for its waiters even if its key is evicted meanwhile.
      ignoreFetchAbort: true,
    });
  }

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    if (!this.cacheable(contentRef)) return this.inner.get(workspaceId, contentRef);
    const compiled = await this.cache.fetch(`${workspaceId}\u0000${contentRef}`, { context: { workspaceId, contentRef } });
    if (!compiled) throw new Error(`content ${contentRef} could not be loaded`); // fetchMethod never resolves empty
    return compiled;
  }

  /** Carried content is the job's own: not cached. */
  decode(workspaceId: string, contentRef: string, stored: Uint8Array): CompiledMessage {
    return this.inner.decode(workspaceId, contentRef, stored);
  }

  get cachedEntries(): number {
    return this.cache.size;
  }

  get cachedBytes(): number {
    return this.cache.calculatedSize;
  }
}

interface ContentKey {
  workspaceId: string;
  contentRef: string;
}

/**
 * Approximate memory weight of a cached compiled message, in bytes: its text held twice as
 * UTF-16 (the decoded message and the merger's prepared literals, content/merge.ts keeps
 * one per compiled message while the message lives) and once as wire bytes, plus the
 * objects around each segment and link. Measured in a flood, a small transactional message
 * weighed ~15 KiB in the delivery heap where the old estimate (its characters) said ~300 B,
 * so a 64 MiB budget held far more than 64 MiB.
 */
export function compiledSize(c: CompiledMessage): number {
  const templates: Array<CompiledTemplate | undefined> = [c.subject, c.html, c.text, c.previewText];
  let size = 4096;
  for (const t of templates) {
    for (const s of t?.segments ?? []) size += 256 + (typeof s.part.value === "string" ? 5 * s.part.value.length : 16);
  }
  for (const l of c.links) size += 256 + 4 * (l.url.length + l.token.length);
  return size;
}
