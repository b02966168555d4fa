import { randomBytes } from "node:crypto";
import { appError } from "@mailroom/kit/errors.js";
import { compiledMessage, ContentKind, offersUnsubscribe, type CompiledMessage } from "./compiled.js";
import { append, type Piece } from "./pieces.js";
import { scanHtml, type AttributeValue } from "./scan.js";
import { classifyHref, cleanHref, isInUrlQuery } from "./links.js";
import { htmlToPlainText } from "./text.js";
import { signLinkToken } from "../tokens.js";
import { isSystemSlot, splitVariables, SYSTEM_ONLY } from "./variables.js";
import { FOOTER_TEXT, footerPieces, pixelFormFor, pixelPieces, preheaderPieces } from "./snippets.js";
import { compileLiquidMessage } from "./liquid.js";
import { escapeHtml } from "../escape.js";
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
  /**
   * Liquid source compiled once (compile/liquid.ts): only the system values are slots, the
   * rest of the Liquid stays in the literals for the merge to render per recipient; a link
   * whose URL holds Liquid is left between LIQUID_LINK marks, tracked per recipient as rendered.
   */
  liquidSource?: boolean;
  /** A broadcast in Liquid: the zone of `date` for a recipient without a valid `timezone` property (the workspace's). */
  timeZone?: string;
}

/** Around an href whose URL holds Liquid: the merge tracks the URL each recipient's render gives. */
export const LIQUID_LINK = { open: "\u0002", close: "\u0003" } as const;

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
  const liquid = input.liquidSource === true;
  if (!literal && !liquid && input.systemVariablesOnly !== true && input.kind === ContentKind.BROADCAST && usesLiquid(html, input.subject, input.previewText, input.text)) {
    return compileLiquidMessage(input, (source) => compileMessage(source, opts));
  }
  const only = input.systemVariablesOnly === true || liquid ? SYSTEM_ONLY : undefined;
  // Literal content has no variables: every text is one literal piece.
  const textPieces = literal ? (text: string): Piece[] => (text ? [{ lit: text }] : []) : (text: string) => sourcePieces(text, only);
  // Placeholders stand for href values (and Liquid markup) in the HTML given to html-to-text;
  // the random part keeps author text from ever being mistaken for one.
  const nonce = randomBytes(8).toString("hex");
  const markup: string[] = [];
  const asTemplateText = literal
    ? (text: string) => text
    : liquid
      ? (text: string) => hideLiquid(normalizeVariables(text, only), (m) => `x${nonce}q${markup.push(m) - 1}x`)
      : (text: string) => normalizeVariables(text, only);
  const scan = scanHtml(html);
  const links: { url: string; token: string }[] = [];
  const edits: Edit[] = [];
  const hrefSlots: Piece[][] = [];
  const placeholder = (pieces: Piece[]) => `x${nonce}s${hrefSlots.push(pieces) - 1}x`;

  for (const href of scan.hrefs) {
    if (liquid && holdsLiquid(href.decoded)) {
      const source = html.slice(href.start, href.end);
      const mark = (url: string): Piece[] => [{ lit: LIQUID_LINK.open + url + LIQUID_LINK.close }];
      edits.push({ start: href.start, end: href.end, html: mark(source), textHtml: placeholder(mark(href.decoded)) });
      continue;
    }
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
    edits.push({ start: preheaderAt, end: preheaderAt, html: preheaderPieces(input.previewText, literal, only, liquid ? escapeOutsideLiquid : undefined), textHtml: "" });
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
    let generated = htmlToPlainText(textHtml, scan);
    if (markup.length) generated = restoreLiquid(generated, nonce, markup);
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

/** Liquid markup in text: a tag or an output, but not a system slot (`{{unsubscribeUrl}}`), which stays a slot. */
const LIQUID_MARKUP = /\{%[\s\S]*?%\}|\{\{[\s\S]*?\}\}/g;

function holdsLiquid(text: string): boolean {
  if (text.indexOf("{") === -1) return false;
  for (const m of text.matchAll(LIQUID_MARKUP)) if (!isSystemSlot(m[0].replace(/\s+/g, ""))) return true;
  return false;
}

/** Liquid markup replaced by single words, so the text generator can neither wrap nor change it. */
function hideLiquid(text: string, hide: (markup: string) => string): string {
  if (text.indexOf("{") === -1) return text;
  return text.replace(LIQUID_MARKUP, (m) => (isSystemSlot(m) ? m : hide(m)));
}

/**
 * The generated text with its Liquid back. A line holding only tags (`{% for %}` on a line of
 * its own) is removed and its tags start the next line, so a loop or a condition adds no empty
 * lines to the text; the merge folds runs of blank lines a false condition leaves.
 */
function restoreLiquid(text: string, nonce: string, markup: string[]): string {
  const hidden = new RegExp(`x${nonce}q(\\d+)x`, "g");
  const lines = text.split("\n");
  const out: string[] = [];
  let carried = "";
  for (const line of lines) {
    const onlyTags = line.trim() !== "" && line.replace(hidden, (m, i: string) => (markup[Number(i)]!.startsWith("{%") ? "" : m)).trim() === "";
    if (onlyTags) {
      carried += line.trim();
      continue;
    }
    out.push(carried + line);
    carried = "";
  }
  if (carried) out.push(carried);
  return out.join("\n").replace(hidden, (_m, i: string) => markup[Number(i)]!);
}

/** HTML-escapes text outside Liquid markup (a preview text written in Liquid, set into the HTML). */
function escapeOutsideLiquid(text: string): string {
  let out = "";
  let pos = 0;
  for (const m of text.matchAll(LIQUID_MARKUP)) {
    out += escapeHtml(text.slice(pos, m.index)) + m[0];
    pos = m.index! + m[0].length;
  }
  return out + escapeHtml(text.slice(pos));
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
