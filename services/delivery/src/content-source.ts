import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { EmailService } from "../../../gen/mailroom/email/v1/email_pb.js";
import type { BroadcastService } from "../../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import type { CompiledMessage, CompiledTemplate } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { WeightedLru } from "./lru.js";
import { PermanentError, type ContentSource } from "./repositories.js";

/** Fetches compiled content from the service that owns it, by the job's content_ref. */
export class RpcContentSource implements ContentSource {
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
 * A broadcast is compiled once and merged for every contact: keep compiled contents in a
 * bounded LRU (by text size), keyed by workspace too so tenants never share an entry, and
 * fetch each one once even when many jobs ask for it at the same moment.
 */
export class CachedContentSource implements ContentSource {
  private readonly cache: WeightedLru<CompiledMessage>;
  private readonly loading = new Map<string, Promise<CompiledMessage>>();

  constructor(
    private readonly inner: ContentSource,
    maxBytes: number,
  ) {
    this.cache = new WeightedLru(maxBytes);
  }

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    const key = `${workspaceId}\u0000${contentRef}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const pending = this.loading.get(key);
    if (pending) return pending;
    const load = this.inner
      .get(workspaceId, contentRef)
      .then((compiled) => {
        this.cache.set(key, compiled, compiledSize(compiled));
        return compiled;
      })
      .finally(() => this.loading.delete(key));
    this.loading.set(key, load);
    return load;
  }

  get cachedEntries(): number {
    return this.cache.size;
  }
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
