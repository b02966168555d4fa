import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { CompiledMessage, CompiledTemplate } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { signToken } from "../../kit/src/tokens.js";
import type { ContentMerger, MergedContent, MergeRecipient } from "./repositories.js";

/**
 * A plain merger over the compiled segments: variables, links and the unsubscribe URL.
 * It stands in for the renderer's mergeMessage (services/renderer/src/merge.ts) in unit
 * tests and wherever the renderer module is not available.
 */
export class SimpleMerger implements ContentMerger {
  merge(compiled: CompiledMessage, r: MergeRecipient, ctx: { secret: string; publicUrl: string }): MergedContent {
    const token = signToken(ctx.secret, { w: compiled.workspaceId, c: r.contactId, e: r.email, m: r.messageId });
    const unsubscribeUrl = `${ctx.publicUrl}/u/${token}`;
    const values: Record<string, string> = {
      ...stringValues(r.variables),
      email: r.email,
      contactId: r.contactId,
      unsubscribeUrl,
      manageUrl: unsubscribeUrl,
    };
    const render = (t: CompiledTemplate | undefined, escape: (s: string) => string) =>
      (t?.segments ?? [])
        .map((s) => {
          switch (s.part.case) {
            case "literal":
              return s.part.value;
            case "variable":
              return escape(values[s.part.value] ?? "");
            case "link":
              return escape(compiled.links[s.part.value]?.url ?? "");
            default:
              return "";
          }
        })
        .join("");
    const same = (s: string) => s;
    return {
      subject: render(compiled.subject, same),
      html: render(compiled.html, escapeHtml),
      text: render(compiled.text, same),
      previewText: render(compiled.previewText, same),
      unsubscribeUrl,
      listUnsubscribeUrl: unsubscribeUrl,
    };
  }
}

function stringValues(vars: JsonObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(vars ?? {})) out[k] = asText(v);
  return out;
}

function asText(v: JsonValue): string {
  if (v === null || v === undefined) return "";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
