import { LRUCache } from "lru-cache";
import type { Template } from "liquidjs";
import { scanHtml } from "../compile/scan.js";
import { isInUrlQuery } from "../compile/links.js";
import { splitVariables } from "../compile/variables.js";
import { newBudget, parseField, parseSnippet, renderParsed, type ParsedSnippet } from "./engine.js";

/**
 * A stored template as the Liquid engine renders it: parsed once per version (of the template,
 * its layout and its snippets), rendered per recipient. The output keeps the system values
 * (`{{unsubscribeUrl}}`, `{{manageUrl}}`, `{{contactId}}`) as merge slots for the compiler,
 * which then tracks links and adds the pixel on the rendered HTML (compile with
 * `systemVariablesOnly`).
 */
export interface TemplateFields {
  subject: string;
  html: string;
  text: string;
  previewText: string;
}

export interface LiquidSource {
  /** Identifies this exact content (ids and versions of the template, layout and snippets): the parse cache's key. */
  key: string;
  fields: TemplateFields;
  /** A layout's HTML and text: its `{{ content }}` receives the template's rendered HTML (text). */
  layout?: { html: string; text: string };
  snippets?: ReadonlyArray<{ name: string; html: string }>;
}

/** Values the compiler merges per delivery, left as slots by the render. */
const SYSTEM_SLOTS = { unsubscribeUrl: "{{unsubscribeUrl}}", manageUrl: "{{manageUrl}}", contactId: "{{contactId}}" } as const;

interface Parsed {
  subject: Template[];
  html: Template[];
  text: Template[];
  previewText: Template[];
  layout?: { html: Template[]; text: Template[] };
  snippets: Map<string, ParsedSnippet>;
}

export class ParsedTemplate {
  private constructor(private readonly parsed: Parsed) {}

  /** Parses every part (throws LiquidSyntaxError naming the field). */
  static parse(source: LiquidSource): ParsedTemplate {
    const f = source.fields;
    const snippets = new Map<string, ParsedSnippet>();
    for (const s of source.snippets ?? []) snippets.set(s.name, parseSnippet(s.name, forHtmlMerge(s.html)));
    return new ParsedTemplate({
      subject: parseField("subject", f.subject, "raw"),
      html: parseField("html", forHtmlMerge(f.html), "html"),
      text: parseField("text", f.text, "raw"),
      previewText: parseField("previewText", f.previewText, "raw"),
      layout: source.layout && {
        html: parseField("layout html", forHtmlMerge(source.layout.html), "html"),
        text: parseField("layout text", source.layout.text, "raw"),
      },
      snippets,
    });
  }

  /**
   * One recipient's content. `email` is the recipient's address (a system value, never the
   * caller's); a missing value renders empty. Throws RenderFailure (limits, a missing snippet).
   */
  render(variables: Readonly<Record<string, unknown>>, opts: { email: string; timeZone?: string }): TemplateFields {
    const p = this.parsed;
    const values: Record<string, unknown> = { ...variables, email: opts.email || variables.email, ...SYSTEM_SLOTS };
    const render = { snippets: p.snippets, timeZone: opts.timeZone, budget: newBudget() };
    const subject = oneLine(renderParsed(p.subject, "raw", values, render));
    const previewText = oneLine(renderParsed(p.previewText, "raw", values, render));
    let html = renderParsed(p.html, "html", values, render);
    let text = p.text.length ? renderParsed(p.text, "raw", values, render) : "";
    if (p.layout) {
      const marker = `\u0004content${Math.random().toString(36).slice(2)}\u0004`;
      const framed = { ...values, content: marker };
      html = spliceContent(renderParsed(p.layout.html, "html", framed, render), marker, html);
      if (text && p.layout.text.length) text = spliceContent(renderParsed(p.layout.text, "raw", framed, render), marker, text);
    }
    return { subject, html, text, previewText };
  }
}

/** `{{ content }}` is written once or more as the template's rendered part (never escaped twice). */
function spliceContent(rendered: string, marker: string, content: string): string {
  return rendered.includes(marker) ? rendered.split(marker).join(content) : rendered;
}

/** Subject and preview text are header-like: line breaks (from values or tags) become one space. */
export function oneLine(text: string): string {
  return /[\r\n]/.test(text) ? text.replace(/[\r\n]+/g, " ") : text;
}

/**
 * HTML made ready for Liquid so that it renders as the `{{name}}` merge did: a bare
 * `{{ name }}` in the query or fragment of an http(s) href is percent-encoded (`url_param`),
 * and an unquoted attribute value holding an output is quoted (a value with a space cannot
 * add attributes). Done once per parse.
 */
export function forHtmlMerge(html: string): string {
  if (html.indexOf("{{") === -1) return html;
  const scan = scanHtml(html);
  const edits: { start: number; end: number; text: string }[] = [];
  for (const href of scan.hrefs) {
    const source = html.slice(href.start, href.end);
    if (source.indexOf("{{") === -1) continue;
    let out = "";
    let changed = false;
    for (const piece of splitVariables(source)) {
      if ("literal" in piece) out += piece.literal;
      else if (isInUrlQuery(source, piece.start)) {
        out += `{{ ${piece.variable} | url_param }}`;
        changed = true;
      } else out += `{{${piece.variable}}}`;
    }
    if (changed || href.quote === "unquoted") edits.push({ start: href.start, end: href.end, text: quote(changed ? out : source, href.quote) });
  }
  for (const attr of scan.unquotedWithBraces) {
    if (edits.some((e) => e.start === attr.start)) continue;
    edits.push({ start: attr.start, end: attr.end, text: quote(html.slice(attr.start, attr.end), "unquoted") });
  }
  if (!edits.length) return html;
  edits.sort((a, b) => a.start - b.start);
  let out = "";
  let pos = 0;
  for (const e of edits) {
    if (e.start < pos) continue;
    out += html.slice(pos, e.start) + e.text;
    pos = e.end;
  }
  return out + html.slice(pos);
}

function quote(value: string, kind: "double" | "single" | "unquoted"): string {
  if (kind !== "unquoted") return value;
  return !value.includes('"') ? `"${value}"` : !value.includes("'") ? `'${value}'` : value;
}

/** Parsed templates by content key: one parse per version of a template, its layout and snippets. */
export class ParsedTemplateCache {
  private readonly entries = new LRUCache<string, ParsedTemplate>({ max: 512 });

  get(source: LiquidSource): ParsedTemplate {
    let parsed = this.entries.get(source.key);
    if (!parsed) {
      parsed = ParsedTemplate.parse(source);
      this.entries.set(source.key, parsed);
    }
    return parsed;
  }
}
