import { toBinary } from "@bufbuild/protobuf";
import { CompiledMessageSchema } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { CompileCache } from "@mailroom/content/compile/cache.js";
import { ContentKind } from "@mailroom/content/compile/compiled.js";
import type { CompiledContent } from "../domain/model.js";
import type { CompileInput, Renderer } from "../domain/ports.js";

/**
 * Compiles in this process with the content library's compiler, the same code the renderer
 * service runs. A transactional email is compiled once, when it is accepted, so the hop to
 * the renderer cost two processes an RPC each (about 0.8 ms of CPU per email, more than
 * the compile itself); repeated content (a batch, a receipt template) hits the cache.
 */
export class InProcessRenderer implements Renderer {
  private readonly cache: CompileCache;

  constructor(settings: { secret: string; publicUrl: string }) {
    this.cache = new CompileCache(settings);
  }

  async compile(input: CompileInput): Promise<CompiledContent> {
    const compiled = this.cache.compile({
      html: input.html,
      subject: input.subject,
      previewText: input.previewText,
      text: input.text,
      trackClicks: input.trackClicks,
      trackOpens: input.trackOpens,
      // An automation's email is lifecycle mail: the unsubscribe footer, and delivery's
      // List-Unsubscribe headers, both keyed on the compiled kind.
      kind: input.automation ? ContentKind.AUTOMATION : ContentKind.TRANSACTIONAL,
      literal: input.literal,
      contentId: input.contentId,
      workspaceId: input.workspaceId,
    });
    return toBinary(CompiledMessageSchema, compiled);
  }
}
