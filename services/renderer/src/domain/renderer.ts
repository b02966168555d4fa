import { badRequest } from "@mailroom/kit/errors.js";
import { RenderFailure } from "@mailroom/content/liquid/engine.js";
import { mergeMessage, type MergedMessage, type MergeRecipient } from "@mailroom/content/merge.js";
import { compileMessage, type CompileInput } from "@mailroom/content/compile/compile.js";
import type { CompiledMessage } from "@mailroom/content/compile/compiled.js";
import { detectVariables, type DetectedVariables } from "@mailroom/content/compile/variables.js";

export interface RendererSettings {
  /** HMAC secret of link and recipient tokens. */
  secret: string;
  /** Base of tracking and unsubscribe links. */
  publicUrl: string;
}

/** What to render: content to compile first, or an already compiled message. */
export type RenderSource = { content: CompileInput } | { compiled: CompiledMessage };

/** The renderer's use cases. Stateless: nothing but the settings is kept between calls. */
export class Renderer {
  constructor(private readonly settings: RendererSettings) {}

  detectVariables(input: Parameters<typeof detectVariables>[0]): DetectedVariables {
    return detectVariables(input);
  }

  compile(input: CompileInput): CompiledMessage {
    return compileMessage(input, this.settings);
  }

  /** One recipient's message; a compiled message from a caller is checked as it is merged. */
  render(source: RenderSource | undefined, recipient: MergeRecipient): MergedMessage {
    if (!source) throw badRequest("source_required", "either content or compiled is required");
    const compiled = "content" in source ? this.compile(source.content) : source.compiled;
    try {
      return mergeMessage(compiled, recipient, this.settings);
    } catch (err) {
      if (err instanceof RangeError) throw badRequest("invalid_compiled_message", err.message);
      if (err instanceof RenderFailure) throw badRequest("template_render_failed", `The content could not be rendered for this recipient: ${err.message}`);
      throw err;
    }
  }
}
