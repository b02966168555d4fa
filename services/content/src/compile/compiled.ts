import { create } from "@bufbuild/protobuf";
import {
  CompiledMessageSchema,
  CompiledTemplateSchema,
  ContentKind,
  SegmentSchema,
  TrackedLinkSchema,
  type CompiledMessage,
  type CompiledTemplate,
  type Segment,
  type TrackedLink,
} from "@mailroom/proto/renderer/v1/renderer_pb.js";
import type { Piece } from "./pieces.js";

/**
 * The content contract: a CompiledMessage is what the content library's merge engine
 * consumes and what travels to delivery, so the compiler produces it directly rather
 * than a domain copy converted at the edge (a second 100 KB structure per compile for
 * no gain). This module is the only one in the domain that touches generated types.
 */
export { ContentKind, type CompiledMessage, type TrackedLink };

/**
 * Whether content of this kind is mail a contact may leave: broadcasts and automation emails
 * carry the unsubscribe footer (unless they link {{unsubscribeUrl}} themselves) and the
 * List-Unsubscribe headers; transactional emails (receipts, password resets) carry neither.
 */
export function offersUnsubscribe(kind: ContentKind): boolean {
  return kind === ContentKind.BROADCAST || kind === ContentKind.AUTOMATION;
}

export interface CompiledParts {
  subject: Piece[];
  html: Piece[];
  text: Piece[];
  previewText: Piece[];
  links: { url: string; token: string }[];
  trackClicks: boolean;
  trackOpens: boolean;
  kind: ContentKind;
  contentId: string;
  workspaceId: string;
  unsubscribeFooterAdded: boolean;
  textGenerated: boolean;
}

export function compiledMessage(parts: CompiledParts): CompiledMessage {
  const { subject, html, text, previewText, links, ...rest } = parts;
  return create(CompiledMessageSchema, {
    ...rest,
    subject: toTemplate(subject),
    html: toTemplate(html),
    text: toTemplate(text),
    previewText: toTemplate(previewText),
    links: links.map((link) => create(TrackedLinkSchema, link)),
    variables: variableNames(subject, previewText, html, text),
  });
}

function toTemplate(pieces: Piece[]): CompiledTemplate {
  const segments: Segment[] = [];
  let literal = "";
  const flush = () => {
    if (literal) segments.push(create(SegmentSchema, { part: { case: "literal", value: literal } }));
    literal = "";
  };
  for (const p of pieces) {
    if ("lit" in p) {
      literal += p.lit;
      continue;
    }
    flush();
    if ("variable" in p) segments.push(create(SegmentSchema, { part: { case: "variable", value: p.variable } }));
    else if ("urlVariable" in p) segments.push(create(SegmentSchema, { part: { case: "urlVariable", value: p.urlVariable } }));
    else if ("link" in p) segments.push(create(SegmentSchema, { part: { case: "link", value: p.link } }));
    else segments.push(create(SegmentSchema, { part: { case: "openPixel", value: true } }));
  }
  flush();
  return create(CompiledTemplateSchema, { segments });
}

function variableNames(...lists: Piece[][]): string[] {
  const names = new Set<string>();
  for (const list of lists) {
    for (const p of list) {
      if ("variable" in p) names.add(p.variable);
      else if ("urlVariable" in p) names.add(p.urlVariable);
    }
  }
  return [...names];
}
