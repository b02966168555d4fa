import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { mergeMessageBytes } from "@mailroom/content/merge.js";
import { offersUnsubscribe } from "@mailroom/content/compile/compiled.js";
import { RenderFailure } from "@mailroom/content/liquid/engine.js";
import { PermanentError, type CompiledContent, type ContentMerger, type MergedContent, type MergeRecipient } from "../domain/ports.js";

/**
 * The per-recipient merge of the content library (services/content), a pure function
 * imported in process, cached per compiled message, so merging a broadcast for each
 * contact costs no parsing. It merges straight to wire bytes: literals are encoded once
 * per compiled message, so each recipient costs a concatenation, not a UTF-8 encoding
 * and CRLF pass over the whole body.
 */
export class RendererMerger implements ContentMerger {
  merge(compiled: CompiledContent, recipient: MergeRecipient, ctx: { secret: string; publicUrl: string }): MergedContent {
    // Paired with a content source that hands out compiled messages (adapters/content-source.ts).
    const message = compiled as CompiledMessage;
    let merged: MergedContent;
    try {
      merged = mergeMessageBytes(message, recipient, ctx);
    } catch (err) {
      // A Liquid broadcast that cannot be rendered for this contact (over its limits) fails
      // this one message, never its broadcast (DESIGN §10.2).
      if (err instanceof RenderFailure) throw new PermanentError(`template_render_failed: ${err.message}`);
      throw err;
    }
    // An automation's email rides the transactional lane yet is list mail: its kind says so.
    merged.offersUnsubscribe = offersUnsubscribe(message.kind);
    return merged;
  }
}
