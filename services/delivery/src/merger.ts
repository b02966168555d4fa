import type { CompiledMessage } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { mergeMessage } from "../../renderer/src/merge.js";
import type { ContentMerger, MergedContent, MergeRecipient } from "./repositories.js";

/**
 * The renderer's per-recipient merge (services/renderer/src/merge.ts), a pure function
 * imported in process: string operations over the compiled segments, cached per
 * compiled message, so merging a broadcast for each contact costs no parsing.
 */
export class RendererMerger implements ContentMerger {
  merge(compiled: CompiledMessage, recipient: MergeRecipient, ctx: { secret: string; publicUrl: string }): MergedContent {
    return mergeMessage(compiled, recipient, ctx);
  }
}
