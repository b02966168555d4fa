import { hash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { LRUCache } from "lru-cache";
import { CompiledMessageSchema, TrackedLinkSchema } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { signLinkToken } from "../tokens.js";
import { compileMessage, validateCompileInput, type CompileInput, type CompileOptions } from "./compile.js";
import type { CompiledMessage } from "./compiled.js";

/**
 * Compiles through a cache of compiled content, so the same content sent again (a receipt
 * template, a batch of one HTML to fifty recipients) is tokenized and turned into text once.
 * The compiled message depends on the content id only through the link tokens, which are
 * signed again for every hit; everything else is shared, so entries must never be mutated.
 * Keyed by a digest of everything else compileMessage reads, workspace included, so one
 * tenant's entry never serves another.
 */
export class CompileCache {
  private readonly entries: LRUCache<string, CompiledMessage>;

  constructor(
    private readonly opts: CompileOptions,
    limits: { maxEntries?: number; maxBytes?: number } = {},
  ) {
    this.entries = new LRUCache<string, CompiledMessage>({
      max: limits.maxEntries ?? 512,
      // Roughly the source size: compiled segments hold about the HTML and its text once each.
      maxSize: limits.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (_value, key) => Number(key.slice(0, key.indexOf(":"))) || 1,
    });
  }

  compile(input: CompileInput): CompiledMessage {
    validateCompileInput(input);
    const key = cacheKey(input);
    const cached = this.entries.get(key);
    if (!cached) {
      const compiled = compileMessage(input, this.opts);
      this.entries.set(key, compiled);
      return compiled;
    }
    if (cached.contentId === input.contentId) return cached;
    return create(CompiledMessageSchema, {
      ...cached,
      contentId: input.contentId,
      links: cached.links.map((link, index) =>
        create(TrackedLinkSchema, { url: link.url, token: signLinkToken(this.opts.secret, { contentId: input.contentId, index, url: link.url }) }),
      ),
    });
  }
}

/** `<approximate bytes>:<digest>`; every field is length-prefixed so no two inputs collide by concatenation. */
function cacheKey(input: CompileInput): string {
  const flags = `${input.kind}|${input.literal === true}|${input.trackClicks}|${input.trackOpens}|${input.systemVariablesOnly === true}`;
  let bytes = 0;
  let text = "";
  for (const field of [flags, input.workspaceId, input.subject, input.previewText, input.text, input.html]) {
    text += `${field.length}:${field}`;
    bytes += field.length * 2;
  }
  // One-shot digest of the joined fields (the bytes a Hash fed field by field would see): no Hash object per send.
  return `${bytes}:${hash("sha256", text, "base64url")}`;
}
