import { toBinary } from "@bufbuild/protobuf";
import { CompiledMessageSchema } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { CompileCache } from "@mailroom/content/compile/cache.js";
import { ContentKind } from "@mailroom/content/compile/compiled.js";
import { ParsedTemplateCache, type TemplateFields } from "@mailroom/content/liquid/template.js";
import { LiquidSyntaxError, RenderFailure } from "@mailroom/content/liquid/engine.js";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import { appError } from "@mailroom/kit/errors.js";
import type { CompiledContent } from "../domain/model.js";
import type { CompileInput, Renderer } from "../domain/ports.js";

/**
 * Compiles in this process with the content library's compiler, the same code the renderer
 * service runs. A transactional email is compiled once, when it is accepted, so the hop to
 * the renderer cost two processes an RPC each (about 0.8 ms of CPU per email, more than
 * the compile itself); repeated content (a batch, a receipt template) hits the cache.
 *
 * A Liquid template (DESIGN §10.2) is parsed once per version (ParsedTemplateCache) and
 * rendered here for its one recipient; the compiler then tracks the links of the rendered
 * HTML (a link whose URL holds a value is tracked with that recipient's URL) and adds the pixel.
 */
export class InProcessRenderer implements Renderer {
  private readonly cache: CompileCache;
  private readonly parsed = new ParsedTemplateCache();

  constructor(settings: { secret: string; publicUrl: string }) {
    this.cache = new CompileCache(settings);
  }

  async compile(input: CompileInput): Promise<CompiledContent> {
    const rendered = input.liquid ? this.render(input.liquid) : undefined;
    const source = rendered ?? input;
    const compiled = this.cache.compile({
      html: source.html,
      subject: source.subject,
      previewText: source.previewText,
      text: source.text,
      trackClicks: input.trackClicks,
      trackOpens: input.trackOpens,
      // An automation's email is lifecycle mail: the unsubscribe footer, and delivery's
      // List-Unsubscribe headers, both keyed on the compiled kind.
      kind: input.automation ? ContentKind.AUTOMATION : ContentKind.TRANSACTIONAL,
      literal: input.literal,
      systemVariablesOnly: rendered !== undefined,
      contentId: input.contentId,
      workspaceId: input.workspaceId,
    });
    return toBinary(CompiledMessageSchema, compiled);
  }

  private render(liquid: NonNullable<CompileInput["liquid"]>): TemplateFields {
    const t = liquid.template;
    try {
      const parsed = this.parsed.get({
        key: t.liquidKey!,
        fields: { subject: t.subject, html: t.html, text: t.text, previewText: t.previewText },
        layout: t.layout,
        snippets: t.snippets,
      });
      const zone = typeof liquid.variables.timezone === "string" && isTimeZone(liquid.variables.timezone) ? liquid.variables.timezone : t.timeZone;
      return parsed.render(liquid.variables, { email: liquid.email, timeZone: zone || "UTC" });
    } catch (err) {
      if (liquid.raw && err instanceof LiquidSyntaxError) {
        // A raw email's own content: the caller's mistake, shown where it is.
        throw appError({
          code: "invalid_template",
          httpStatus: 400,
          message: `${err.field}, line ${err.line}, column ${err.column}: ${err.reason}`,
          extra: { field: JSON.stringify(err.field), line: JSON.stringify(err.line), column: JSON.stringify(err.column), reason: JSON.stringify(err.reason) },
        });
      }
      if (liquid.raw && err instanceof RenderFailure) {
        throw appError({ code: "template_render_failed", httpStatus: 400, message: `The email could not be rendered for this recipient: ${err.message}` });
      }
      if (err instanceof RenderFailure || err instanceof LiquidSyntaxError) {
        // A stored template that no longer parses (saved before a rule changed) fails its sends the same way.
        throw appError({
          code: "template_render_failed",
          httpStatus: 400,
          message: `Template "${t.name}" could not be rendered for this recipient: ${err.message}`,
          extra: { template: JSON.stringify(t.name) },
        });
      }
      throw err;
    }
  }
}
