import { Tokenizer, QuoteType, type TokenizerCallbacks } from "htmlparser2";

/**
 * One pass of htmlparser2's tokenizer over the source, recording source offsets
 * only: the compiler splices at these offsets, so everything it does not rewrite
 * stays byte-for-byte as the author wrote it (no DOM, no re-serialisation).
 */
export interface AttributeValue {
  /** Lowercased tag name of the element carrying the attribute. */
  tag: string;
  /** Lowercased attribute name. */
  name: string;
  /** Source offsets of the value, quotes excluded. */
  start: number;
  end: number;
  quote: "double" | "single" | "unquoted";
  /** The value with character references decoded, as a browser sees it. */
  decoded: string;
}

export interface HtmlScan {
  /** href of link elements (a, area, VML shapes in Outlook conditional comments). */
  hrefs: AttributeValue[];
  /** Unquoted attribute values that contain "{{" (merged values need quotes there). */
  unquotedWithBraces: AttributeValue[];
  /** Offset just after the first `<body …>` / `</head>` / `<html …>` / doctype, or -1. */
  bodyOpenEnd: number;
  headCloseEnd: number;
  htmlOpenEnd: number;
  doctypeEnd: number;
  /** Offset of the `<` of the last `</body>` / `</html>`, or -1. */
  bodyCloseStart: number;
  htmlCloseStart: number;
  /** Start tags seen, and an upper bound of the element nesting depth. */
  tagCount: number;
  maxDepth: number;
}

const LINK_TAGS = new Set(["a", "area", "v:roundrect", "v:rect", "v:oval", "v:shape"]);
const VOID_TAGS = new Set([
  "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
]);
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 12 || c === 13;

/** Conditional comments are scanned once more (not deeper) for Outlook-only buttons. */
const CONDITIONAL_COMMENT = /^\[if[^\]]*\]>/i;

export function scanHtml(html: string): HtmlScan {
  const scan: HtmlScan = {
    hrefs: [],
    unquotedWithBraces: [],
    bodyOpenEnd: -1,
    headCloseEnd: -1,
    htmlOpenEnd: -1,
    doctypeEnd: -1,
    bodyCloseStart: -1,
    htmlCloseStart: -1,
    tagCount: 0,
    maxDepth: 0,
  };
  tokenize(html, 0, scan, true);
  return scan;
}

function tokenize(source: string, offset: number, scan: HtmlScan, topLevel: boolean): void {
  let tag = "";
  let seenHref = false;
  let attrName = "";
  let attrNameEnd = 0;
  let attrValue = "";
  let depth = 0;
  const slice = (start: number, end: number) => source.slice(start, end);

  const cbs: TokenizerCallbacks = {
    onopentagname(start, end) {
      tag = slice(start, end).toLowerCase();
      seenHref = false;
      scan.tagCount++;
    },
    onattribname(start, end) {
      attrName = slice(start, end).toLowerCase();
      attrNameEnd = end;
      attrValue = "";
    },
    onattribdata(start, end) {
      attrValue += slice(start, end);
    },
    onattribentity(codepoint) {
      attrValue += String.fromCodePoint(codepoint);
    },
    onattribend(quote, endIndex) {
      if (quote === QuoteType.NoValue) return;
      const isHref = attrName === "href" && LINK_TAGS.has(tag) && !seenHref;
      const maybeBraces = quote === QuoteType.Unquoted && attrValue.includes("{{");
      if (!isHref && !maybeBraces) return;
      const span = valueSpan(source, attrNameEnd, quote, endIndex);
      if (!span) return;
      const value: AttributeValue = {
        tag,
        name: attrName,
        start: span.start + offset,
        end: span.end + offset,
        quote: quote === QuoteType.Double ? "double" : quote === QuoteType.Single ? "single" : "unquoted",
        decoded: attrValue,
      };
      if (isHref) {
        seenHref = true; // browsers use the first href of an element
        scan.hrefs.push(value);
      } else {
        scan.unquotedWithBraces.push(value);
      }
    },
    onopentagend(endIndex) {
      if (topLevel) {
        if (tag === "body" && scan.bodyOpenEnd < 0) scan.bodyOpenEnd = endIndex + 1;
        if (tag === "html" && scan.htmlOpenEnd < 0) scan.htmlOpenEnd = endIndex + 1;
      }
      if (!VOID_TAGS.has(tag)) scan.maxDepth = Math.max(scan.maxDepth, ++depth);
      tag = "";
    },
    onselfclosingtag(endIndex) {
      if (topLevel) {
        if (tag === "body" && scan.bodyOpenEnd < 0) scan.bodyOpenEnd = endIndex + 1;
        if (tag === "html" && scan.htmlOpenEnd < 0) scan.htmlOpenEnd = endIndex + 1;
      }
      tag = "";
    },
    onclosetag(start, endIndex) {
      const name = slice(start, endIndex).toLowerCase();
      if (!VOID_TAGS.has(name) && depth > 0) depth--;
      if (!topLevel || source.charCodeAt(start - 1) !== 47 /* / */) return;
      if (name === "body") scan.bodyCloseStart = start - 2 + offset;
      else if (name === "html") scan.htmlCloseStart = start - 2 + offset;
      else if (name === "head" && scan.headCloseEnd < 0) {
        const gt = source.indexOf(">", endIndex);
        if (gt >= 0) scan.headCloseEnd = gt + 1 + offset;
      }
    },
    ondeclaration(_start, endIndex) {
      if (topLevel && scan.doctypeEnd < 0) scan.doctypeEnd = endIndex + 1;
    },
    oncomment(start, endIndex, endOffset) {
      if (!topLevel) return;
      const body = slice(start, endIndex - endOffset);
      if (CONDITIONAL_COMMENT.test(body)) tokenize(body, start + offset, scan, false);
    },
    oncdata() {},
    onprocessinginstruction() {},
    ontext() {},
    ontextentity() {},
    onend() {},
  };
  const tokenizer = new Tokenizer({ decodeEntities: true }, cbs);
  tokenizer.write(source);
  tokenizer.end();
}

/**
 * Where an attribute's value sits in the source. The tokenizer reports where the
 * attribute ends; the value starts after `=`, optional whitespace and the quote.
 */
function valueSpan(source: string, nameEnd: number, quote: QuoteType, endIndex: number) {
  let i = nameEnd;
  while (i < endIndex && isSpace(source.charCodeAt(i))) i++;
  if (source.charCodeAt(i) !== 61 /* = */) return undefined;
  i++;
  while (i < endIndex && isSpace(source.charCodeAt(i))) i++;
  if (quote === QuoteType.Unquoted) return i <= endIndex ? { start: i, end: endIndex } : undefined;
  const q = quote === QuoteType.Double ? 34 : 39;
  if (source.charCodeAt(i) !== q || source.charCodeAt(endIndex - 1) !== q || endIndex - 1 < i + 1) return undefined;
  return { start: i + 1, end: endIndex - 1 };
}
