import type { CompiledMessage } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { mergeMessageBytes } from "../../renderer/src/merge.js";
import type { ContentMerger, MergedContent, MergeRecipient } from "./repositories.js";

/**
 * The renderer's per-recipient merge (services/renderer/src/merge.ts), a pure function
 * imported in process, cached per compiled message, so merging a broadcast for each
 * contact costs no parsing. It merges straight to wire bytes: literals are encoded once
 * per compiled message, so each recipient costs a concatenation, not a UTF-8 encoding
 * and CRLF pass over the whole body.
 */
export class RendererMerger implements ContentMerger {
  merge(compiled: CompiledMessage, recipient: MergeRecipient, ctx: { secret: string; publicUrl: string }): MergedContent {
    return mergeMessageBytes(compiled, recipient, ctx);
  }
}
