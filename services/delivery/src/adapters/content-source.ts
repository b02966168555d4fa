import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { EmailService } from "../../../../gen/mailroom/email/v1/email_pb.js";
import type { BroadcastService } from "../../../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import type { CompiledMessage, CompiledTemplate } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { LRUCache } from "lru-cache";
import { PermanentError, type ContentSource } from "../domain/ports.js";

/** A content source that hands out the renderer's compiled messages (what the merger takes). */
export interface CompiledMessageSource extends ContentSource {
  get(workspaceId: string, contentRef: string): Promise<CompiledMessage>;
}

/** Fetches compiled content from the service that owns it, by the job's content_ref. */
export class RpcContentSource implements CompiledMessageSource {
  constructor(
    private readonly email: Client<typeof EmailService>,
    private readonly broadcast: Client<typeof BroadcastService>,
  ) {}

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    const colon = contentRef.indexOf(":");
    const kind = contentRef.slice(0, colon);
    const id = contentRef.slice(colon + 1);
    try {
      const res =
        kind === "email"
          ? await this.email.getCompiledContent({ workspaceId, id })
          : kind === "broadcast"
            ? await this.broadcast.getCompiledContent({ workspaceId, id })
            : undefined;
      if (!res) throw new PermanentError(`unknown content_ref kind "${kind}"`);
      if (!res.compiled) throw new PermanentError(`no compiled content for ${contentRef}`);
      return res.compiled;
    } catch (err) {
      throw asPermanentWhenFinal(err, `content ${contentRef}`);
    }
  }
}

/** NotFound / InvalidArgument / PermissionDenied will not change on retry; anything else may. */
export function asPermanentWhenFinal(err: unknown, what: string): unknown {
  if (err instanceof ConnectError && [Code.NotFound, Code.InvalidArgument, Code.PermissionDenied].includes(err.code)) {
    return new PermanentError(`${what}: ${err.rawMessage}`);
  }
  return err;
}

/**
 * A broadcast is compiled once and merged for every contact: keep compiled contents in an
 * LRU bounded by their size in bytes, keyed by workspace too so tenants never share an
 * entry; concurrent misses for one key load it once (the cache's fetchMethod).
 */
export class CachedContentSource implements CompiledMessageSource {
  private readonly cache: LRUCache<string, CompiledMessage, ContentKey>;

  constructor(
    private readonly inner: CompiledMessageSource,
    maxBytes: number,
  ) {
    this.cache = new LRUCache<string, CompiledMessage, ContentKey>({
      maxSize: maxBytes,
      // One entry bigger than the whole budget is not kept (it would evict everything else).
      sizeCalculation: compiledSize,
      fetchMethod: (_key, _stale, { context }) => this.inner.get(context.workspaceId, context.contentRef),
      // A load already started finishes for its waiters even if its key is evicted meanwhile.
      ignoreFetchAbort: true,
    });
  }

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    const compiled = await this.cache.fetch(`${workspaceId}\u0000${contentRef}`, { context: { workspaceId, contentRef } });
    if (!compiled) throw new Error(`content ${contentRef} could not be loaded`); // fetchMethod never resolves empty
    return compiled;
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

/** Approximate memory weight: the text it holds. */
export function compiledSize(c: CompiledMessage): number {
  const templates: Array<CompiledTemplate | undefined> = [c.subject, c.html, c.text, c.previewText];
  let size = 256;
  for (const t of templates) {
    for (const s of t?.segments ?? []) size += typeof s.part.value === "string" ? s.part.value.length : 8;
  }
  for (const l of c.links) size += l.url.length + l.token.length;
  return size;
}
