import { randomBytes } from "node:crypto";
import { appError } from "@mailroom/kit/errors.js";
import { compiledMessage, ContentKind, offersUnsubscribe, type CompiledMessage } from "./compiled.js";
import { append, type Piece } from "./pieces.js";
import { scanHtml, type AttributeValue } from "./scan.js";
import { classifyHref, cleanHref, isInUrlQuery } from "./links.js";
import { htmlToPlainText } from "./text.js";
import { signLinkToken } from "../tokens.js";
import { splitVariables, SYSTEM_ONLY } from "./variables.js";
import { FOOTER_TEXT, footerPieces, pixelFormFor, pixelPieces, preheaderPieces } from "./snippets.js";
import { compileLiquidMessage } from "./liquid.js";
import { usesLiquid } from "../liquid/engine.js";

/**
 * Compiles content once (at schedule time, for test sends, per transactional email):
 * one tokenizer pass over the HTML finds link hrefs and insertion points, then the
 * source is spliced at those offsets into segments. Everything not rewritten stays
 * byte-for-byte as the author wrote it. The result merges per recipient with string
 * operations only (the content library's merge.ts).
 */
export interface CompileInput {
  html: string;
  subject: string;
  previewText: string;
  /** Plain text given by the caller; generated from the final HTML when empty. */
  text: string;
  trackClicks: boolean;
  trackOpens: boolean;
  kind: ContentKind;
  contentId: string;
  workspaceId: string;
  /**
   * Content sent as given (raw transactional emails): `{{…}}` is text, not a merge
   * variable, in the HTML, subject, preview text and text. Links are still tracked and
   * the open pixel still added.
   */
  literal?: boolean;
  /**
   * Content a Liquid render already merged: only the system values (`{{unsubscribeUrl}}`,
   * `{{manageUrl}}`, `{{contactId}}`) are slots; any other `{{…}}` left in it came from a
   * value and is text. Links are tracked with the URL as rendered.
   */
  systemVariablesOnly?: boolean;
}

export interface CompileOptions {
  secret: string;
  /** Links already pointing at our tracking/unsubscribe pages are not wrapped again. */
  publicUrl?: string;
}

export const LIMITS = {
  /** The spec's broadcast HTML limit (500 KB). */
  htmlBytes: 500 * 1024,
  /** A transactional email's HTML (5 MB, the public API's limit). */
  transactionalHtmlBytes: 5 * 1024 * 1024,
  textBytes: 1024 * 1024,
  subjectChars: 2_000,
  previewChars: 2_000,
};

interface Edit {
  start: number;
  end: number;
  /** Replacement in the sent HTML. */
  html: Piece[];
  /** Replacement in the HTML given to the text generator. */
  textHtml: string;
}

export function validateCompileInput(input: CompileInput): void {
  const htmlLimit = input.kind === ContentKind.BROADCAST ? LIMITS.htmlBytes : LIMITS.transactionalHtmlBytes;
  if (Buffer.byteLength(input.html, "utf8") > htmlLimit) {
    throw appError({ code: "html_too_large", httpStatus: 413, message: `HTML is larger than ${htmlLimit / 1024} KB` });
  }
  if (Buffer.byteLength(input.text, "utf8") > LIMITS.textBytes) {
    throw appError({ code: "text_too_large", httpStatus: 413, message: `text is larger than ${LIMITS.textBytes / 1024} KB` });
  }
  if (input.subject.length > LIMITS.subjectChars) {
    throw appError({ code: "subject_too_long", httpStatus: 400, message: `subject is longer than ${LIMITS.subjectChars} characters` });
  }
  if (input.previewText.length > LIMITS.previewChars) {
    throw appError({ code: "preview_text_too_long", httpStatus: 400, message: `previewText is longer than ${LIMITS.previewChars} characters` });
  }
  if (!input.contentId) throw appError({ code: "content_id_required", httpStatus: 400, message: "contentId is required" });
  if (!input.workspaceId) throw appError({ code: "workspace_id_required", httpStatus: 400, message: "workspaceId is required" });
}

export function compileMessage(input: CompileInput, opts: CompileOptions): CompiledMessage {
  validateCompileInput(input);
  const { html } = input;
  const literal = input.literal === true;
  // A broadcast in Liquid is rendered per recipient before it is compiled (compile/liquid.ts).
  if (!literal && input.systemVariablesOnly !== true && input.kind === ContentKind.BROADCAST && usesLiquid(html, input.subject, input.previewText, input.text)) {
    return compileLiquidMessage(input);
  }
  const only = input.systemVariablesOnly === true ? SYSTEM_ONLY : undefined;
  // Literal content has no variables: every text is one literal piece.
  const textPieces = literal ? (text: string): Piece[] => (text ? [{ lit: text }] : []) : (text: string) => sourcePieces(text, only);
  const asTemplateText = literal ? (text: string) => text : (text: string) => normalizeVariables(text, only);
  const scan = scanHtml(html);
  const links: { url: string; token: string }[] = [];
  const edits: Edit[] = [];
  // Placeholders stand for href values in the HTML given to html-to-text; the random
  // part keeps author text from ever being mistaken for one.
  const nonce = randomBytes(8).toString("hex");
  const hrefSlots: Piece[][] = [];
  const placeholder = (pieces: Piece[]) => `x${nonce}s${hrefSlots.push(pieces) - 1}x`;

  for (const href of scan.hrefs) {
    // Rendered content: braces a value left in a URL are text, so only a system slot keeps a link untracked.
    const asLiteral = literal || (only !== undefined && !splitVariables(href.decoded, only).some((p) => "variable" in p));
    const action = classifyHref(href.decoded, { trackClicks: input.trackClicks, publicUrl: opts.publicUrl, literal: asLiteral });
    if (action === "track") {
      const url = cleanHref(href.decoded);
      const index = links.length;
      links.push({ url, token: signLinkToken(opts.secret, { contentId: input.contentId, index, url }) });
      const pieces: Piece[] = [{ link: index }];
      edits.push({ start: href.start, end: href.end, html: pieces, textHtml: placeholder(pieces) });
    } else if (action === "unsafe") {
      edits.push({ start: href.start, end: href.end, html: [{ lit: "#" }], textHtml: "#" });
    } else {
      const source = html.slice(href.start, href.end);
      if (literal || source.indexOf("{{") === -1) continue;
      const htmlPieces = hrefPieces(source, only);
      if (!htmlPieces) continue;
      const textPieces = hrefPieces(href.decoded, only) ?? [{ lit: href.decoded }];
      edits.push({ start: href.start, end: href.end, html: quoted(htmlPieces, href, source), textHtml: placeholder(textPieces) });
    }
  }
  for (const attr of literal ? [] : scan.unquotedWithBraces) {
    const source = html.slice(attr.start, attr.end);
    const pieces = sourcePieces(source, only);
    if (!pieces.some((p) => "variable" in p)) continue;
    edits.push({ start: attr.start, end: attr.end, html: quoted(pieces, attr, source), textHtml: source });
  }

  const referencesUnsubscribe = !literal && splitVariables(html, only).some((p) => "variable" in p && p.variable === "unsubscribeUrl");
  const addFooter = offersUnsubscribe(input.kind) && !referencesUnsubscribe;
  const preheaderAt = firstNonNegative(scan.bodyOpenEnd, scan.headCloseEnd, scan.htmlOpenEnd, scan.doctypeEnd, 0);
  let closingAt = firstNonNegative(scan.bodyCloseStart, scan.htmlCloseStart, html.length);
  if (closingAt < preheaderAt) closingAt = html.length;
  if (input.previewText) {
    edits.push({ start: preheaderAt, end: preheaderAt, html: preheaderPieces(input.previewText, literal, only), textHtml: "" });
  }
  const closing: Edit = { start: closingAt, end: closingAt, html: [], textHtml: "" };
  if (addFooter) {
    const footer = footerPieces();
    append(closing.html, footer);
    closing.textHtml += piecesAsTemplateHtml(footer);
  }
  if (input.trackOpens) append(closing.html, pixelPieces(pixelFormFor(html)));
  if (closing.html.length) edits.push(closing);

  // Stable sort keeps the preheader before the footer when both land on one offset.
  edits.sort((a, b) => a.start - b.start);
  const htmlOut: Piece[] = [];
  let textHtml = "";
  let pos = 0;
  for (const edit of edits) {
    if (edit.start < pos) continue; // defensive: spans never overlap
    const between = html.slice(pos, edit.start);
    append(htmlOut, textPieces(between));
    textHtml += asTemplateText(between);
    append(htmlOut, edit.html);
    textHtml += edit.textHtml;
    pos = edit.end;
  }
  const rest = html.slice(pos);
  append(htmlOut, textPieces(rest));
  textHtml += asTemplateText(rest);

  let textOut: Piece[];
  const textGenerated = !input.text;
  if (input.text) {
    textOut = textPieces(input.text);
  } else {
    const generated = htmlToPlainText(textHtml, scan);
    textOut = [];
    const slotPattern = new RegExp(`x${nonce}s(\\d+)x`, "g");
    let last = 0;
    for (let m = slotPattern.exec(generated); m; m = slotPattern.exec(generated)) {
      append(textOut, textPieces(generated.slice(last, m.index)));
      append(textOut, (hrefSlots[Number(m[1])] ?? []));
      last = m.index + m[0].length;
    }
    append(textOut, textPieces(generated.slice(last)));
  }
  if (offersUnsubscribe(input.kind) && !textOut.some((p) => "variable" in p && p.variable === "unsubscribeUrl")) {
    append(textOut, FOOTER_TEXT);
  }

  return compiledMessage({
    subject: textPieces(input.subject),
    html: htmlOut,
    text: textOut,
    previewText: textPieces(input.previewText),
    links,
    trackClicks: input.trackClicks,
    trackOpens: input.trackOpens,
    kind: input.kind,
    contentId: input.contentId,
    workspaceId: input.workspaceId,
    unsubscribeFooterAdded: addFooter,
    textGenerated,
  });
}

/** Literal runs and variables of a piece of source text. */
function sourcePieces(text: string, only?: ReadonlySet<string>): Piece[] {
  return splitVariables(text, only).map((p) => ("literal" in p ? { lit: p.literal } : { variable: p.variable }));
}

/**
 * Pieces of an href value that holds variables: those in the query string or fragment
 * of an http(s) URL are percent-encoded at merge time, the rest merged as they are.
 * `undefined` when the value holds no variable after all.
 */
function hrefPieces(value: string, only?: ReadonlySet<string>): Piece[] | undefined {
  const parts = splitVariables(value, only);
  if (!parts.some((p) => "variable" in p)) return undefined;
  return parts.map((p) => {
    if ("literal" in p) return { lit: p.literal };
    return isInUrlQuery(value, p.start) ? { urlVariable: p.variable } : { variable: p.variable };
  });
}

/**
 * Values merged into an unquoted attribute could break out of it at a space, so the
 * value is wrapped in quotes (merged values are escaped for quotes, not for spaces).
 */
function quoted(pieces: Piece[], attr: AttributeValue, source: string): Piece[] {
  if (attr.quote !== "unquoted") return pieces;
  const q = !source.includes('"') ? '"' : !source.includes("'") ? "'" : "";
  return q ? [{ lit: q }, ...pieces, { lit: q }] : pieces;
}

/** `{{ name }}` → `{{name}}` so the text generator's word wrap cannot split a variable. */
function normalizeVariables(text: string, only?: ReadonlySet<string>): string {
  return text.indexOf("{{") === -1 ? text : piecesAsTemplateHtml(sourcePieces(text, only));
}

function piecesAsTemplateHtml(pieces: Piece[]): string {
  let out = "";
  for (const p of pieces) {
    if ("lit" in p) out += p.lit;
    else if ("variable" in p) out += `{{${p.variable}}}`;
    else if ("urlVariable" in p) out += `{{${p.urlVariable}}}`;
  }
  return out;
}

function firstNonNegative(...values: number[]): number {
  for (const v of values) if (v >= 0) return v;
  return 0;
}
