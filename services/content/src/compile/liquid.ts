import { create } from "@bufbuild/protobuf";
import { appError } from "@mailroom/kit/errors.js";
import { CompiledMessageSchema, LiquidContentSchema } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { offersUnsubscribe, type CompiledMessage } from "./compiled.js";
import { findVariables, referencesVariable } from "./variables.js";
import { forHtmlMerge, ParsedTemplate } from "../liquid/template.js";
import { checkTemplate, LiquidSyntaxError } from "../liquid/engine.js";
import type { ContentKind } from "./compiled.js";

/** The fields of compile.ts's CompileInput this reads (not imported: compile.ts imports this). */
interface LiquidInput {
  html: string;
  subject: string;
  previewText: string;
  text: string;
  trackClicks: boolean;
  trackOpens: boolean;
  kind: ContentKind;
  contentId: string;
  workspaceId: string;
  timeZone?: string;
}

/** compile.ts's compileMessage for the source with `liquidSource` set (passed in: that module imports this one). */
type CompileSource = (input: LiquidInput & { liquidSource: true }) => CompiledMessage;

/**
 * A broadcast written in Liquid (DESIGN §10.2) is compiled once, with its Liquid in place:
 * static links tracked, footer, preheader, pixel, and a text part generated with the tags
 * kept. The merge renders those literals per recipient (one Liquid render, no HTML parse) and
 * tracks a link whose URL holds Liquid as rendered (prepare() in merge.ts). The sources ride
 * along, for the merge to fall back on. Bad Liquid is refused here, when the broadcast is
 * scheduled or previewed: 400 invalid_template with the field, line and column.
 */
export function compileLiquidMessage(input: LiquidInput, compileSource?: CompileSource): CompiledMessage {
  const fields = { subject: input.subject, html: input.html, text: input.text, previewText: input.previewText };
  try {
    ParsedTemplate.parse({ key: "", fields });
    // Snippets are the stored templates' (DESIGN §10.2): a broadcast has none to render, so
    // `{% render %}` would fail every recipient. Refused here instead, where it is written.
    const snippets = checkTemplate(fields, (field) => (field === "html" ? "html" : "raw"));
    if (snippets.size) throw renderRefused(fields, [...snippets][0]!);
  } catch (err) {
    if (!(err instanceof LiquidSyntaxError)) throw err;
    throw appError({
      code: "invalid_template",
      httpStatus: 400,
      message: `${err.field}, line ${err.line}, column ${err.column}: ${err.reason}`,
      extra: { field: JSON.stringify(err.field), line: JSON.stringify(err.line), column: JSON.stringify(err.column), reason: JSON.stringify(err.reason) },
    });
  }
  const variables = findVariables(input.subject, input.previewText, input.html, input.text);
  if (compileSource) {
    const once = compileSource({ ...input, html: forHtmlMerge(input.html), liquidSource: true });
    once.variables = variables;
    once.liquid = create(LiquidContentSchema, { ...fields, compiled: true, timeZone: input.timeZone ?? "" });
    return once;
  }
  return create(CompiledMessageSchema, {
    trackClicks: input.trackClicks,
    trackOpens: input.trackOpens,
    kind: input.kind,
    contentId: input.contentId,
    workspaceId: input.workspaceId,
    variables,
    // Known per recipient only; this says whether the footer is added unless the HTML links it.
    unsubscribeFooterAdded: offersUnsubscribe(input.kind) && !referencesVariable(input.html, "unsubscribeUrl"),
    textGenerated: !input.text,
    liquid: { ...fields, timeZone: input.timeZone ?? "" },
  });
}

/** Where a broadcast renders a snippet, as a syntax error there. */
function renderRefused(fields: Record<string, string>, name: string): LiquidSyntaxError {
  const tag = /\{%-?\s*render\b/;
  const [field, text] = Object.entries(fields).find(([, v]) => tag.test(v)) ?? ["html", ""];
  const before = text.slice(0, Math.max(0, text.search(tag))).split("\n");
  return new LiquidSyntaxError(field, before.length, before[before.length - 1]!.length + 1, `snippets are for stored templates: a broadcast cannot render "${name}" (paste its content instead)`);
}
