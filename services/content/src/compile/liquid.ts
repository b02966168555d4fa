import { create } from "@bufbuild/protobuf";
import { appError } from "@mailroom/kit/errors.js";
import { CompiledMessageSchema } from "../../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { offersUnsubscribe, type CompiledMessage } from "./compiled.js";
import { findVariables, referencesVariable } from "./variables.js";
import { ParsedTemplate } from "../liquid/template.js";
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
}

/**
 * A broadcast written in Liquid (DESIGN §10.2) compiles to its checked sources: the merge
 * parses them once per compiled message and renders each recipient, then compiles the
 * rendered content (prepare() in merge.ts). Bad Liquid is refused here, when the broadcast is
 * scheduled or previewed: 400 invalid_template with the field, line and column.
 */
export function compileLiquidMessage(input: LiquidInput): CompiledMessage {
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
  return create(CompiledMessageSchema, {
    trackClicks: input.trackClicks,
    trackOpens: input.trackOpens,
    kind: input.kind,
    contentId: input.contentId,
    workspaceId: input.workspaceId,
    variables: findVariables(input.subject, input.previewText, input.html, input.text),
    // Known per recipient only; this says whether the footer is added unless the HTML links it.
    unsubscribeFooterAdded: offersUnsubscribe(input.kind) && !referencesVariable(input.html, "unsubscribeUrl"),
    textGenerated: !input.text,
    liquid: fields,
  });
}

/** Where a broadcast renders a snippet, as a syntax error there. */
function renderRefused(fields: Record<string, string>, name: string): LiquidSyntaxError {
  const tag = /\{%-?\s*render\b/;
  const [field, text] = Object.entries(fields).find(([, v]) => tag.test(v)) ?? ["html", ""];
  const before = text.slice(0, Math.max(0, text.search(tag))).split("\n");
  return new LiquidSyntaxError(field, before.length, before[before.length - 1]!.length + 1, `snippets are for stored templates: a broadcast cannot render "${name}" (paste its content instead)`);
}
