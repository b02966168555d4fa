import { compile, type HtmlToTextOptions } from "html-to-text";
import { Tokenizer, type TokenizerCallbacks } from "htmlparser2";

/**
 * Plain text from HTML with html-to-text: links shown as `text [url]`, images skipped,
 * headings left in their case (uppercasing would turn {{firstName}} into {{FIRSTNAME}}).
 *
 * html-to-text builds a DOM with htmlparser2's Parser, whose element stack makes deeply
 * nested or tag-dense hostile input quadratic (100k unclosed <div>s: ~15 s). Such input
 * is converted by a linear tokenizer-only fallback instead, so compile time stays bounded.
 */
export const TEXT_LIMITS = { maxTags: 20_000, maxDepth: 300 };

const OPTIONS: HtmlToTextOptions = {
  wordwrap: 80,
  limits: { maxDepth: TEXT_LIMITS.maxDepth + 100, maxInputLength: 2_000_000 },
  selectors: [
    { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
    { selector: "img", format: "skip" },
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
  ],
};

// Compiled once: convert() rebuilds its selector tables on every call (~3 ms each).
const toText = compile(OPTIONS);

export function htmlToPlainText(html: string, stats: { tagCount: number; maxDepth: number }): string {
  if (stats.tagCount > TEXT_LIMITS.maxTags || stats.maxDepth > TEXT_LIMITS.maxDepth) return simpleText(html);
  return toText(html).trim();
}

const BLOCK_TAGS = new Set([
  "address", "article", "aside", "blockquote", "br", "center", "dd", "div", "dl", "dt", "footer", "form", "h1", "h2",
  "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul",
]);
const SKIP_TAGS = new Set(["head", "script", "style", "title", "template", "noscript"]);

/** Linear fallback: text content, line breaks at block elements, links as `text [url]`. */
export function simpleText(html: string): string {
  let out = "";
  let tag = "";
  let attr = "";
  let attrValue = "";
  let href = "";
  let skipping = "";
  const linkStack: string[] = [];
  const cbs: TokenizerCallbacks = {
    onopentagname(start, end) {
      tag = html.slice(start, end).toLowerCase();
      href = "";
      if (!skipping && SKIP_TAGS.has(tag)) skipping = tag;
      if (!skipping && BLOCK_TAGS.has(tag)) out += "\n";
    },
    onattribname(start, end) {
      attr = html.slice(start, end).toLowerCase();
      attrValue = "";
    },
    onattribdata(start, end) {
      attrValue += html.slice(start, end);
    },
    onattribentity(cp) {
      attrValue += String.fromCodePoint(cp);
    },
    onattribend() {
      if (tag === "a" && attr === "href" && !href) href = attrValue.trim();
    },
    onopentagend() {
      if (tag === "a" && linkStack.length < 1000) linkStack.push(href);
    },
    onselfclosingtag() {},
    onclosetag(start, end) {
      const name = html.slice(start, end).toLowerCase();
      if (skipping) {
        if (name === skipping) skipping = "";
        return;
      }
      if (name === "a") {
        const target = linkStack.pop();
        if (target && !target.startsWith("#")) out += ` [${target.replace(/^mailto:/i, "")}]`;
      }
      if (BLOCK_TAGS.has(name)) out += "\n";
    },
    ontext(start, end) {
      if (!skipping) out += html.slice(start, end);
    },
    ontextentity(cp) {
      if (!skipping) out += String.fromCodePoint(cp);
    },
    oncdata() {},
    oncomment() {},
    ondeclaration() {},
    onprocessinginstruction() {},
    onend() {},
  };
  const tokenizer = new Tokenizer({ decodeEntities: true }, cbs);
  tokenizer.write(html);
  tokenizer.end();
  return out
    .replace(/[ \t\f\r\u00a0]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
