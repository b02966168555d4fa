import {
  CaseTag,
  ForTag,
  IfTag,
  UnlessTag,
  Hash,
  Liquid,
  LiquidError,
  Tag,
  TablerowTag,
  TypeGuards,
  evalQuotedToken,
  filters as builtIn,
  type Context,
  type Emitter,
  type FilterImplOptions,
  type Parser,
  type TagToken,
  type Template,
  type TopLevelToken,
} from "liquidjs";
import { escapeHtml } from "../escape.js";
import { fuse, isFusedRun } from "./fuse.js";
import { isSystemSlot } from "../compile/variables.js";
import { stringifyValue } from "../values.js";

/**
 * The Liquid engine of templates (DESIGN §10.2), sandboxed for content written by a workspace
 * and values sent by anyone:
 *
 * - no file system: `{% render "name" %}` resolves snippets from the map the caller hands to
 *   each render (a workspace's own), names in quotes only; `include`, `layout` and `block`
 *   refuse to parse;
 * - strict filters (an unknown filter is a parse error, found when the template is saved);
 * - own properties only (`{{ x.constructor }}` is empty), no function is ever called;
 * - a render runs at most 50 ms and 1,000 loop iterations (for and tablerow, snippets
 *   included), else it fails with a RenderFailure;
 * - a missing value renders empty.
 *
 * Output values are written as the `{{name}}` merge wrote them (arrays "a, b", objects as
 * JSON, dates ISO), HTML-escaped in HTML, so content written for that merge renders the same.
 */

export const RENDER_LIMITS = { ms: 50, iterations: 1_000, snippetDepth: 10, memory: 4_000_000 } as const;

/** A field's syntax error: where it is and the parser's message (without liquidjs's own ", line:…" suffix). */
export class LiquidSyntaxError extends Error {
  constructor(
    readonly field: string,
    readonly line: number,
    readonly column: number,
    readonly reason: string,
  ) {
    super(`${field}: ${reason} (line ${line}, column ${column})`);
    this.name = "LiquidSyntaxError";
  }
}

/** A render that failed: over a limit, a missing snippet, a filter that threw. */
export class RenderFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RenderFailure";
  }
}

/** What one render may still spend, and the snippets it may render (module state: renders are synchronous). */
interface Budget {
  shared: RenderBudget;
  iterations: number;
  depth: number;
  snippets: ReadonlyMap<string, ParsedSnippet>;
  timeZone: string;
}
let budget: Budget | undefined;
/** Snippet names met while parsing (checkTemplate collects them). */
let parsing: Set<string> | undefined;

function spend(): void {
  const b = budget;
  if (!b) return;
  if (++b.iterations > RENDER_LIMITS.iterations) throw new RenderFailure(`more than ${RENDER_LIMITS.iterations} loop iterations`);
  if ((b.iterations & 31) === 0 && performance.now() > b.shared.deadline) checkTime(b.shared);
}

/**
 * The 50 ms are of CPU, not of the clock: a process that the machine deschedules, or a GC
 * pause, must not fail a recipient's email. The clock is read cheaply on the way; only once it
 * has passed the deadline is the CPU time read, and the deadline moved by what is left of it.
 */
function checkTime(shared: RenderBudget): void {
  const used = (cpuMicros() - shared.cpuStart) / 1000;
  if (used >= RENDER_LIMITS.ms) throw new RenderFailure(`rendering took more than ${RENDER_LIMITS.ms} ms`);
  shared.deadline = performance.now() + (RENDER_LIMITS.ms - used);
}

/** This thread's CPU time where Node has it (22.19+/23.9+), else the process's (never less than the thread's). */
const cpuClock: () => { user: number; system: number } =
  typeof (process as { threadCpuUsage?: unknown }).threadCpuUsage === "function"
    ? () => (process as unknown as { threadCpuUsage(): { user: number; system: number } }).threadCpuUsage()
    : () => process.cpuUsage();
function cpuMicros(): number {
  const u = cpuClock();
  return u.user + u.system;
}

/** One loop body, counted each time it runs. */
class CountedBody implements Template {
  readonly token: Template["token"];
  /** Whether the body is fused runs only (known once fuse() has replaced the templates). */
  private plain?: boolean;
  constructor(
    private readonly templates: Template[],
    private readonly liquid: Liquid,
    owner: Tag,
  ) {
    this.token = owner.token;
  }
  render(ctx: Context, emitter: Emitter): Generator<unknown, void, unknown> | void {
    spend();
    // A body of literals and outputs (most loop bodies) renders in plain calls, no generator per step.
    if (this.isPlain()) {
      for (const t of this.templates) t.render(ctx, emitter);
      return;
    }
    return this.renderTags(ctx, emitter);
  }
  isPlain(): boolean {
    return (this.plain ??= this.templates.every(isFusedRun));
  }
  private *renderTags(ctx: Context, emitter: Emitter): Generator<unknown, void, unknown> {
    yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter);
  }
}

class CountedFor extends ForTag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid, parser: Parser) {
    super(token, remain, liquid, parser);
    if (this.templates.length) this.templates = [new CountedBody(this.templates, liquid, this)];
    // liquidjs's loop renders its body through `this.liquid.renderer` each iteration, a
    // generator each time: a plain body is rendered in the call instead.
    this.liquid = plainBodies(liquid);
  }
}

/** Branches of conditions, rendered without a generator when they hold literals and outputs only. */
class PlainIf extends IfTag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid, parser: Parser) {
    super(token, remain, liquid, parser);
    this.liquid = plainBodies(liquid);
  }
}
class PlainUnless extends UnlessTag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid, parser: Parser) {
    super(token, remain, liquid, parser);
    this.liquid = plainBodies(liquid);
  }
}
class PlainCase extends CaseTag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid, parser: Parser) {
    super(token, remain, liquid, parser);
    this.liquid = plainBodies(liquid);
  }
}

const isPlain = (t: Template) => isFusedRun(t) || (t instanceof CountedBody && t.isPlain());
const plainRenderers = new WeakMap<Liquid, Liquid>();
/**
 * The engine as a block tag sees it (loops, conditions): a body of literals and outputs (fused
 * runs, or a counted loop body of them) renders in the call; anything else as liquidjs does.
 */
function plainBodies(liquid: Liquid): Liquid {
  let seen = plainRenderers.get(liquid);
  if (!seen) {
    const renderer = liquid.renderer;
    const plain = Object.create(renderer) as typeof renderer;
    plain.renderTemplates = function (templates, ctx, emitter) {
      if (!emitter || !templates.every(isPlain)) return renderer.renderTemplates(templates, ctx, emitter);
      for (const t of templates) t.render(ctx, emitter);
      return undefined as never;
    };
    seen = Object.create(liquid, { renderer: { value: plain } }) as Liquid;
    plainRenderers.set(liquid, seen);
  }
  return seen;
}

class CountedTablerow extends TablerowTag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid, parser: Parser) {
    super(token, remain, liquid, parser);
    const self = this as unknown as { templates: Template[] };
    if (self.templates.length) self.templates = [new CountedBody(self.templates, liquid, this)];
  }
}

/** `{% render "footer" %}` / `{% render "footer", label: "x" %}`: a snippet of the workspace, in its own scope. */
class SnippetTag extends Tag {
  private readonly snippet: string;
  private readonly hash: Hash;
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid) {
    super(token, remain, liquid);
    const name = this.tokenizer.readValue();
    if (!name || !TypeGuards.isQuotedToken(name)) throw new Error('render takes a snippet name in quotes, e.g. {% render "footer" %}');
    this.snippet = evalQuotedToken(name);
    parsing?.add(this.snippet);
    this.tokenizer.skipBlank();
    if (this.tokenizer.peek() === ",") this.tokenizer.advance();
    this.hash = new Hash(this.tokenizer, liquid.options.keyValueSeparator);
  }
  *render(ctx: Context, emitter: Emitter): Generator<unknown, void, unknown> {
    const b = budget;
    const parsed = b?.snippets.get(this.snippet);
    if (!b || !parsed) throw new RenderFailure(`snippet "${this.snippet}" does not exist`);
    if (b.depth >= RENDER_LIMITS.snippetDepth) throw new RenderFailure(`snippets nested more than ${RENDER_LIMITS.snippetDepth} deep`);
    const templates = this.liquid === engines.html ? parsed.html : parsed.raw;
    const child = ctx.spawn();
    Object.assign(child.bottom(), (yield this.hash.render(ctx)) as object);
    b.depth++;
    try {
      yield this.liquid.renderer.renderTemplates(templates, child, emitter);
    } finally {
      b.depth--;
    }
  }
}

class Refused extends Tag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid) {
    super(token, remain, liquid);
    throw new Error(`{% ${token.name} %} is not available in templates: use {% render "snippet" %} for shared pieces and a layout for the frame`);
  }
  render(): void {}
}

/**
 * Output escaping: the merge's value formatting, HTML-escaped for HTML. U+0000 to U+0003 are
 * dropped from values: a compiled Liquid message marks its slots and links with them (merge.ts),
 * and no email has a use for them.
 */
const MARK = /[\u0000-\u0003]/;
const noMarks = (s: string) => (MARK.test(s) ? s.replace(/[\u0000-\u0003]/g, "") : s);
const asHtml = (v: unknown) => escapeHtml(noMarks(stringifyValue(v)));
const asText = (v: unknown) => noMarks(stringifyValue(v));

function newEngine(outputEscape: (v: unknown) => string): Liquid {
  const liquid = new Liquid({
    // Never the disk: an empty in-memory map, and our own render tag reads only the map of the render.
    templates: {},
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    dynamicPartials: false,
    jsTruthy: false,
    outputEscape,
    timezoneOffset: "UTC",
    locale: "en-US",
    parseLimit: 5_000_000,
    memoryLimit: RENDER_LIMITS.memory,
  });
  liquid.registerTag("for", CountedFor);
  liquid.registerTag("if", PlainIf);
  liquid.registerTag("unless", PlainUnless);
  liquid.registerTag("case", PlainCase);
  liquid.registerTag("tablerow", CountedTablerow);
  liquid.registerTag("render", SnippetTag);
  for (const name of ["include", "layout", "block"]) liquid.registerTag(name, Refused);
  // The author's own escape ends the output: no second, automatic one.
  const escape = handlerOf(builtIn.escape!);
  const escapeOnce = handlerOf(builtIn.escape_once!);
  type This = ThisParameterType<typeof escape>;
  liquid.registerFilter("escape", { handler: function (this: This, v: unknown) { return noMarks(String(escape.call(this, v) ?? "")); }, raw: true });
  liquid.registerFilter("escape_once", { handler: function (this: This, v: unknown) { return noMarks(String(escapeOnce.call(this, v) ?? "")); }, raw: true });
  liquid.registerFilter("raw", { handler: (v: unknown) => (v == null ? v : noMarks(stringifyValue(v))), raw: true });
  liquid.registerFilter("date", dateInZone);
  liquid.registerFilter("money", money);
  liquid.registerFilter("url_param", urlParam);
  return liquid;
}

/** Percent-encoded for a URL's query; a system slot stays a slot (the compiler encodes its value per delivery). */
function urlParam(v: unknown): string {
  const s = stringifyValue(v);
  return isSystemSlot(s) ? s : encodeURIComponent(s);
}

const handlerOf = (f: FilterImplOptions) => (typeof f === "function" ? f : f.handler);
const builtInDate = handlerOf(builtIn.date!);

/** `date` in the recipient's zone (the contact's, else the workspace's) unless one is given. */
function dateInZone(this: ThisParameterType<typeof builtInDate>, value: unknown, format?: unknown, zone?: unknown) {
  const tz = typeof zone === "string" || typeof zone === "number" ? zone : (budget?.timeZone ?? "UTC");
  const v = value instanceof Date ? value : typeof value === "string" || typeof value === "number" ? value : stringifyValue(value);
  return builtInDate.call(this, v, format, tz);
}

/**
 * `{{ 1234.5 | money }}` → 1,234.50; `{{ 12 | money: "EUR" }}` → €12.00;
 * `{{ 12 | money: "EUR", "de-DE" }}` → 12,00 €. Not a number: the value as it is.
 */
function money(value: unknown, currency?: unknown, locale?: unknown): string {
  const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : Number.NaN;
  if (!Number.isFinite(n)) return stringifyValue(value);
  const loc = typeof locale === "string" && locale ? locale : "en-US";
  const cur = typeof currency === "string" ? currency : "";
  return numberFormat(loc, cur).format(n);
}

/** Formats by locale and currency, made once each (making one costs more than a whole loop step). */
const formats = new Map<string, Intl.NumberFormat>();
function numberFormat(locale: string, currency: string): Intl.NumberFormat {
  const key = `${locale}|${currency}`;
  let f = formats.get(key);
  if (!f) {
    try {
      f = currency
        ? new Intl.NumberFormat(locale, { style: "currency", currency })
        : new Intl.NumberFormat(locale, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    } catch {
      throw new RenderFailure(`money: ${JSON.stringify(currency)} is not a currency code or ${JSON.stringify(locale)} not a locale`);
    }
    if (formats.size >= 256) formats.clear();
    formats.set(key, f);
  }
  return f;
}

/** HTML is written through the HTML-escaping engine; subject, preview text and text through the raw one. */
const engines = { html: newEngine(asHtml), raw: newEngine(asText) };
export type Mode = keyof typeof engines;

/**
 * One render of every kind of step when the module loads: the first loop, filter, number and
 * zone format of a process cost milliseconds (compilation, time zone data), which must not
 * count against the 50 ms of a recipient's render.
 */
function warmUp(): void {
  const source = '{% for i in xs %}{{ i | money: "USD" }}{{ i | money }}{{ t | date: "%d %b %Y %H:%M" }}{{ t | date: "%H", "America/New_York" }}{{ s | upcase | default: "x" }}{% endfor %}';
  for (const mode of ["html", "raw"] as const) {
    const templates = engines[mode].parse(source);
    for (let k = 0; k < 3; k++) engines[mode].renderSync(templates, {}, { globals: { xs: [1, 2.5], t: "2026-03-01T23:30:00Z", s: "a" } });
  }
}
warmUp();

export interface ParsedSnippet {
  html: Template[];
  raw: Template[];
}

/**
 * Whether text needs the Liquid engine: a tag (`{%`), or an output that is more than a bare
 * name (`{{ a.b }}`, `{{ x | default: "y" }}`). Content with only `{{name}}` keeps the byte merge.
 */
export function usesLiquid(...texts: string[]): boolean {
  for (const text of texts) {
    if (!text || text.indexOf("{") === -1) continue;
    if (text.includes("{%")) return true;
    for (let at = text.indexOf("{{"); at !== -1; at = text.indexOf("{{", at + 2)) {
      const end = text.indexOf("}}", at + 2);
      if (end === -1) break;
      if (!/^[ \t\r\n]*[A-Za-z_][A-Za-z0-9_]*[ \t\r\n]*$/.test(text.slice(at + 2, end))) return true;
    }
  }
  return false;
}

/** Parses one field, or throws LiquidSyntaxError with its line and column. */
export function parseField(field: string, source: string, mode: Mode): Template[] {
  try {
    return fuse(engines[mode].parse(source));
  } catch (err) {
    throw syntaxError(field, err);
  }
}

/** Parses every field (names → text); returns the snippet names they render. Throws LiquidSyntaxError. */
export function checkTemplate(fields: Record<string, string>, modeOf: (field: string) => Mode): Set<string> {
  const names = new Set<string>();
  parsing = names;
  try {
    for (const [field, source] of Object.entries(fields)) if (source) parseField(field, source, modeOf(field));
  } finally {
    parsing = undefined;
  }
  return names;
}

function syntaxError(field: string, err: unknown): LiquidSyntaxError {
  if (LiquidError.is(err) && err.token) {
    const [line, column] = err.token.getPosition();
    const reason = (err.originalError?.message ?? err.message).replace(/, line:\d+, col:\d+$/, "");
    return new LiquidSyntaxError(field, line, column, reason);
  }
  return new LiquidSyntaxError(field, 1, 1, err instanceof Error ? err.message : String(err));
}

export interface RenderOptions {
  /** Snippets by name, parsed (parseSnippet). */
  snippets?: ReadonlyMap<string, ParsedSnippet>;
  /** IANA zone of `date` when the filter names none. */
  timeZone?: string;
  /** Shared by several renders of one message (its fields, a layout): they share the limits. */
  budget?: RenderBudget;
}

export interface RenderBudget {
  /** When the clock says the time may be spent: the CPU time is read then (checkTime). */
  deadline: number;
  /** CPU time (µs) when the render began. */
  cpuStart: number;
  iterations: number;
}

export function newBudget(): RenderBudget {
  const now = performance.now();
  return { deadline: now + RENDER_LIMITS.ms, cpuStart: cpuNear(now), iterations: 0 };
}

/**
 * The CPU time now, give or take CPU_READ_EVERY_MS: reading it is a system call (a tenth of a
 * small message's render), and a process renders thousands a second. A reading up to that old
 * starts a budget a little early, so a render may be failed that much before its 50 ms; never later.
 */
const CPU_READ_EVERY_MS = 1;
let cpuReading = { at: Number.NEGATIVE_INFINITY, micros: 0 };
function cpuNear(now: number): number {
  if (now - cpuReading.at > CPU_READ_EVERY_MS) cpuReading = { at: now, micros: cpuMicros() };
  return cpuReading.micros;
}

/**
 * Renders parsed templates with these values (read as globals, so snippets see them too).
 * Throws RenderFailure.
 */
export function renderParsed(templates: Template[], mode: Mode, values: Readonly<Record<string, unknown>>, opts: RenderOptions = {}): string {
  const shared = opts.budget ?? newBudget();
  if (performance.now() > shared.deadline) checkTime(shared);
  const outer = budget;
  budget = { shared, iterations: shared.iterations, depth: 0, snippets: opts.snippets ?? new Map(), timeZone: opts.timeZone || "UTC" };
  try {
    // No renderLimit for liquidjs: its limit is of the clock. Loops are where time goes, and
    // spend() checks the CPU time there.
    return engines[mode].renderSync(templates, {}, { globals: values as object, memoryLimit: RENDER_LIMITS.memory }) as string;
  } catch (err) {
    throw asRenderFailure(err);
  } finally {
    shared.iterations = budget.iterations;
    budget = outer;
  }
}

function asRenderFailure(err: unknown): RenderFailure {
  let e: unknown = err;
  while (LiquidError.is(e) && e.originalError) e = e.originalError;
  if (e instanceof RenderFailure) return e;
  const message = e instanceof Error ? e.message : String(e);
  if (/template render limit exceeded/.test(message)) return new RenderFailure(`rendering took more than ${RENDER_LIMITS.ms} ms`);
  if (/memory alloc limit exceeded/.test(message)) return new RenderFailure("rendering built too much text");
  return new RenderFailure(message.replace(/, line:\d+, col:\d+$/, ""));
}

/** A snippet parsed for both engines (it may be rendered from HTML or from text). */
export function parseSnippet(name: string, source: string): ParsedSnippet {
  return { html: parseField(`snippet ${name}`, source, "html"), raw: parseField(`snippet ${name}`, source, "raw") };
}
