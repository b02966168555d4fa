import type { CompiledMessage, CompiledTemplate } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { escapeHtml } from "./escape.js";
import { stringifyValue } from "./values.js";
import type { Template } from "liquidjs";
import { compileMessage, LIQUID_LINK } from "./compile/compile.js";
import { classifyHref, cleanHref } from "./compile/links.js";
import { scanHtml } from "./compile/scan.js";
import { oneLine, ParsedTemplate } from "./liquid/template.js";
import { LiquidSyntaxError, newBudget, parseField, renderParsed } from "./liquid/engine.js";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import { signLinkToken, signRecipientToken } from "./tokens.js";
import { linkBase, linkPrefix, manageUrl } from "./urls.js";

/**
 * Per-recipient merge of a compiled message: string joins only, no parsing.
 * `prepare()` flattens the segments once per compiled message (cached by identity);
 * each merge then signs one recipient token and walks literal/slot arrays.
 *
 * Values: HTML-escaped in the HTML, raw in the text, raw with line breaks folded to
 * spaces in subject and preview text (no header injection through contact data).
 * A missing value is empty text. System values are always computed, never taken from
 * the caller's variables: unsubscribeUrl, manageUrl, contactId; email is the
 * recipient's address.
 */
export interface MergeRecipient {
  email: string;
  contactId?: string;
  /** Message-ID of this delivery; goes into the recipient token. */
  messageId: string;
  /** Contact properties / template variables by name. */
  variables?: Readonly<Record<string, unknown>> | null;
}

export interface MergeContext {
  secret: string;
  /** Base of tracking and unsubscribe links (MAILROOM_PUBLIC_URL). */
  publicUrl: string;
}

export interface MergedMessage {
  subject: string;
  html: string;
  text: string;
  previewText: string;
  unsubscribeUrl: string;
  /** For the List-Unsubscribe header; POST to it is the RFC 8058 one-click unsubscribe. */
  listUnsubscribeUrl: string;
  manageUrl: string;
  /** The signed recipient token used in every link of this message. */
  recipientToken: string;
}

/**
 * A body as it goes on the wire: UTF-8 bytes with CRLF line breaks (every CR, LF and
 * CRLF of the merged text made CRLF), and whether it may travel as 7bit.
 */
export interface WireBody {
  /** Read-only: may be shared between recipients (a body without variables). */
  bytes: Buffer;
  /** ASCII only and no line over 998 octets (RFC 5322): sendable as is, no base64. */
  sevenBit: boolean;
}

/** The merge with HTML and text as wire bytes; subject and preview text stay strings (headers). */
export interface MergedBytes extends Omit<MergedMessage, "html" | "text"> {
  html: WireBody;
  text: WireBody;
}

export function mergeMessage(compiled: CompiledMessage, recipient: MergeRecipient, ctx: MergeContext): MergedMessage {
  return prepare(compiled).merge(recipient, ctx);
}

/**
 * mergeMessage() straight to wire bytes: `html.bytes` equals
 * `Buffer.from(mergeMessage(…).html.replace(/\r\n|\r|\n/g, "\r\n"))`, built by
 * concatenating literals encoded once per compiled message with the few short values.
 */
export function mergeMessageBytes(compiled: CompiledMessage, recipient: MergeRecipient, ctx: MergeContext): MergedBytes {
  return prepare(compiled).mergeBytes(recipient, ctx);
}

/** What prepare() hands out: the per-recipient merge of one compiled message. */
export interface Merger {
  merge(recipient: MergeRecipient, ctx: MergeContext): MergedMessage;
  mergeBytes(recipient: MergeRecipient, ctx: MergeContext): MergedBytes;
}

const cache = new WeakMap<CompiledMessage, Merger>();

/**
 * The fast merger for a compiled message, built once and cached by object identity:
 * treat a CompiledMessage as immutable once it has been merged (cache the object, and
 * decode a fresh one when the content changes).
 */
export function prepare(compiled: CompiledMessage): Merger {
  let prepared = cache.get(compiled);
  if (!prepared) {
    prepared = !compiled.liquid ? new PreparedMessage(compiled) : (compiled.liquid.compiled && CompiledLiquidMessage.of(compiled)) || new LiquidMessage(compiled);
    cache.set(compiled, prepared);
  }
  return prepared;
}

/**
 * A broadcast in Liquid (DESIGN §10.2): parsed once per compiled message; per recipient it is
 * rendered with that contact's values (`date` in the contact's zone, else UTC), then compiled
 * (links tracked with the URL as rendered, footer, pixel, text) and merged. A render over its
 * limits throws the engine's RenderFailure, for that one message.
 */
class LiquidMessage implements Merger {
  private readonly parsed: ParsedTemplate;

  constructor(private readonly compiled: CompiledMessage) {
    const l = compiled.liquid!;
    this.parsed = ParsedTemplate.parse({ key: "", fields: { subject: l.subject, html: l.html, text: l.text, previewText: l.previewText } });
  }

  merge(recipient: MergeRecipient, ctx: MergeContext): MergedMessage {
    return this.rendered(recipient, ctx).merge(recipient, ctx);
  }

  mergeBytes(recipient: MergeRecipient, ctx: MergeContext): MergedBytes {
    return this.rendered(recipient, ctx).mergeBytes(recipient, ctx);
  }

  private rendered(recipient: MergeRecipient, ctx: MergeContext): PreparedMessage {
    const c = this.compiled;
    const values = recipient.variables ?? {};
    const zone = zoneOf(values, this.compiled);
    const out = this.parsed.render(values, { email: recipient.email, timeZone: zone });
    const one = compileMessage(
      { ...out, trackClicks: c.trackClicks, trackOpens: c.trackOpens, kind: c.kind, contentId: c.contentId, workspaceId: c.workspaceId, systemVariablesOnly: true },
      { secret: ctx.secret, publicUrl: ctx.publicUrl },
    );
    return new PreparedMessage(one);
  }
}

/**
 * A broadcast in Liquid compiled once (compile/liquid.ts): its templates' literals hold the
 * Liquid, parsed once here with each slot (a tracked link, the pixel, a system value) standing
 * as a sentinel the render leaves alone. Per recipient: one render per part, then the
 * sentinels become that recipient's values and each link whose URL holds Liquid is tracked as
 * rendered. No HTML parse, no text generation per recipient.
 */
class CompiledLiquidMessage implements Merger {
  /** Signed tokens of the links rendered from Liquid, by URL: recipients share most of them. */
  private readonly linkTokens = new Map<string, string>();

  private constructor(
    private readonly compiled: CompiledMessage,
    private readonly base: PreparedMessage,
    private readonly parsed: { subject: Template[]; html: Template[]; text: Template[]; preview: Template[] },
  ) {}

  /** Undefined when a part does not parse (a generated text whose tags the generator split): the caller falls back. */
  static of(compiled: CompiledMessage): CompiledLiquidMessage | undefined {
    const base = new PreparedMessage(compiled);
    const sources = base.liquidSources();
    try {
      return new CompiledLiquidMessage(compiled, base, {
        subject: parseField("subject", sources.subject, "raw"),
        html: parseField("html", sources.html, "html"),
        text: parseField("text", sources.text, "raw"),
        preview: parseField("previewText", sources.preview, "raw"),
      });
    } catch (err) {
      if (err instanceof LiquidSyntaxError) return undefined;
      throw err;
    }
  }

  merge(recipient: MergeRecipient, ctx: MergeContext): MergedMessage {
    const b = this.base.bindRecipient(recipient, ctx);
    const values = recipient.variables ?? {};
    const zone = zoneOf(values, this.compiled);
    const scope: Record<string, unknown> = {
      ...values,
      email: recipient.email || values.email,
      unsubscribeUrl: b.unsubscribeUrl,
      manageUrl: b.manageUrl,
      contactId: recipient.contactId ?? "",
    };
    const render = { timeZone: zone, budget: newBudget() };
    const p = this.parsed;
    const subject = this.base.resolve("subject", renderParsed(p.subject, "raw", scope, render), b);
    const previewText = this.base.resolve("preview", renderParsed(p.preview, "raw", scope, render), b);
    const html = this.links(this.base.resolve("html", renderParsed(p.html, "html", scope, render), b), "html", b, ctx);
    let text = this.links(this.base.resolve("text", renderParsed(p.text, "raw", scope, render), b), "raw", b, ctx);
    // A false condition or an empty loop leaves its lines blank.
    if (this.compiled.textGenerated) text = text.replace(/\n{3,}/g, "\n\n").trim();
    return {
      subject: oneLine(subject),
      html,
      text,
      previewText: oneLine(previewText),
      unsubscribeUrl: b.unsubscribeUrl,
      listUnsubscribeUrl: b.unsubscribeUrl,
      manageUrl: b.manageUrl,
      recipientToken: b.token,
    };
  }

  mergeBytes(recipient: MergeRecipient, ctx: MergeContext): MergedBytes {
    const m = this.merge(recipient, ctx);
    return { ...m, html: wireBody(m.html), text: wireBody(m.text) };
  }

  /** Each URL rendered between LIQUID_LINK marks: tracked as the compiler tracks a static one, else kept (or `#` when unsafe). */
  private links(rendered: string, mode: "html" | "raw", b: Bindings, ctx: MergeContext): string {
    if (rendered.indexOf(LIQUID_LINK.open) === -1) return rendered;
    const c = this.compiled;
    let next = c.links.length;
    return rendered.replace(LINK_MARKS, (_m, value: string) => {
      const url = mode === "html" ? decodeAttribute(value) : value;
      const action = classifyHref(url, { trackClicks: c.trackClicks, publicUrl: ctx.publicUrl, literal: true });
      if (action === "unsafe") return "#";
      if (action !== "track") return value;
      const clean = cleanHref(url);
      const index = next++;
      const key = `${index} ${clean}`;
      let token = this.linkTokens.get(key);
      if (!token) {
        token = signLinkToken(ctx.secret, { contentId: c.contentId, index, url: clean });
        if (this.linkTokens.size >= 10_000) this.linkTokens.clear();
        this.linkTokens.set(key, token);
      }
      const href = linkPrefix(linkBase(ctx.publicUrl), "click", { link: token }) + b.token;
      return mode === "html" ? escapeHtml(href) : href;
    });
  }
}

/** Liquid's `date` zone for a recipient: its contact's `timezone` when valid, else the workspace's (compiled with the broadcast), else UTC. */
function zoneOf(values: Readonly<Record<string, unknown>>, compiled: CompiledMessage): string {
  return typeof values.timezone === "string" && isTimeZone(values.timezone) ? values.timezone : compiled.liquid?.timeZone || "UTC";
}

const LINK_MARKS = new RegExp(`${LIQUID_LINK.open}([^${LIQUID_LINK.open}${LIQUID_LINK.close}]*)${LIQUID_LINK.close}`, "g");

/** An attribute value as the browser reads it (character references decoded). */
function decodeAttribute(value: string): string {
  if (value.indexOf("&") === -1) return value;
  const quote = value.includes('"') ? "'" : '"';
  return scanHtml(`<a href=${quote}${value}${quote}>`).hrefs[0]?.decoded ?? value;
}


// Slot kinds: how a value is rendered in a given template.
const VAR_HTML = 0; // HTML-escaped
const VAR_RAW = 1;
const VAR_LINE = 2; // raw, CR/LF folded (subject, preview text)
const URL_HTML = 3; // percent-encoded, then HTML-escaped
const URL_RAW = 4; // percent-encoded
const LINK_HTML = 5;
const LINK_RAW = 6;
const PIXEL_HTML = 7;
const PIXEL_RAW = 8;

type Mode = "html" | "text" | "line";
type LiquidPart = "subject" | "html" | "text" | "preview";

interface PreparedTemplate {
  /** lits.length === kinds.length + 1: lit0 slot0 lit1 slot1 … litN. */
  lits: string[];
  kinds: Uint8Array;
  refs: Int32Array;
}

/** Per-recipient values, one array per rendering (indexed by slot kind). */
interface Bindings {
  slots: string[][];
  token: string;
  urls: UrlPrefixes;
  unsubscribeUrl: string;
  manageUrl: string;
}

interface UrlPrefixes {
  publicUrl: string;
  clickRaw: string[];
  clickHtml: string[];
  openRaw: string;
  openHtml: string;
  /** The unsubscribe URL before the recipient token. */
  unsubscribe: string;
}

export class PreparedMessage {
  private readonly names: string[] = [];
  private readonly nameIndex = new Map<string, number>();
  /** Which renderings of each variable the templates need (bit per rendering). */
  private readonly needs: number[] = [];
  private readonly subject: PreparedTemplate;
  private readonly html: PreparedTemplate;
  private readonly text: PreparedTemplate;
  private readonly preview: PreparedTemplate;
  private readonly linkTokens: string[];
  private urls?: UrlPrefixes;
  /** Byte templates of html and text for one publicUrl (link prefixes folded into literals). */
  private bytes?: { publicUrl: string; html: ByteTemplate; text: ByteTemplate };

  constructor(private readonly compiled: CompiledMessage) {
    this.linkTokens = compiled.links.map((l) => l.token);
    this.subject = this.flatten(compiled.subject, "line");
    this.html = this.flatten(compiled.html, "html");
    this.text = this.flatten(compiled.text, "text");
    this.preview = this.flatten(compiled.previewText, "line");
  }

  merge(recipient: MergeRecipient, ctx: MergeContext): MergedMessage {
    const b = this.bind(recipient, ctx);
    return {
      subject: renderString(this.subject, b),
      html: renderString(this.html, b),
      text: renderString(this.text, b),
      previewText: renderString(this.preview, b),
      unsubscribeUrl: b.unsubscribeUrl,
      listUnsubscribeUrl: b.unsubscribeUrl,
      manageUrl: b.manageUrl,
      recipientToken: b.token,
    };
  }

  mergeBytes(recipient: MergeRecipient, ctx: MergeContext): MergedBytes {
    const b = this.bind(recipient, ctx);
    const t = this.byteTemplates(ctx.publicUrl);
    const values = new ValuePieces(b);
    return {
      subject: renderString(this.subject, b),
      html: renderBytes(t.html, values),
      text: renderBytes(t.text, values),
      previewText: renderString(this.preview, b),
      unsubscribeUrl: b.unsubscribeUrl,
      listUnsubscribeUrl: b.unsubscribeUrl,
      manageUrl: b.manageUrl,
      recipientToken: b.token,
    };
  }

  /** This recipient's token, system values and link prefixes (for the compiled Liquid merge). */
  bindRecipient(recipient: MergeRecipient, ctx: MergeContext): Bindings {
    return this.bind(recipient, ctx);
  }

  /** Each template's literals joined, each slot standing as the sentinel `\0<slot>\0`. */
  liquidSources(): Record<LiquidPart, string> {
    const join = (t: PreparedTemplate) => {
      let out = t.lits[0];
      for (let i = 0; i < t.kinds.length; i++) out += `\u0000${i}\u0000${t.lits[i + 1]}`;
      return out;
    };
    return { subject: join(this.subject), html: join(this.html), text: join(this.text), preview: join(this.preview) };
  }

  /** A rendered part with its sentinels replaced by this recipient's values. */
  resolve(part: LiquidPart, rendered: string, b: Bindings): string {
    if (rendered.indexOf("\u0000") === -1) return rendered;
    const t = part === "html" ? this.html : part === "text" ? this.text : part === "subject" ? this.subject : this.preview;
    const pieces = rendered.split("\u0000");
    for (let i = 1; i < pieces.length; i += 2) {
      const slot = Number(pieces[i]);
      pieces[i] = slot >= 0 && slot < t.kinds.length ? slotValue(t.kinds[slot], t.refs[slot], b) : "";
    }
    return pieces.join("");
  }

  private byteTemplates(publicUrl: string): { html: ByteTemplate; text: ByteTemplate } {
    if (this.bytes?.publicUrl === publicUrl) return this.bytes;
    const urls = this.urlsFor(publicUrl);
    this.bytes = { publicUrl, html: byteTemplate(this.html, urls), text: byteTemplate(this.text, urls) };
    return this.bytes;
  }

  /** Signs the recipient token and renders each variable the templates need. */
  private bind(recipient: MergeRecipient, ctx: MergeContext): Bindings {
    const c = this.compiled;
    const contactId = recipient.contactId ?? "";
    const token = signRecipientToken(ctx.secret, {
      workspaceId: c.workspaceId,
      messageId: recipient.messageId,
      email: recipient.email,
      contactId,
      contentId: c.contentId,
    });
    const urls = this.urlsFor(ctx.publicUrl);
    const unsubscribe = urls.unsubscribe + token;
    const manage = manageUrl(unsubscribe);

    const vars = recipient.variables ?? {};
    const n = this.names.length;
    const raw = new Array<string>(n);
    const html = new Array<string>(n);
    const line = new Array<string>(n);
    const urlRaw = new Array<string>(n);
    const urlHtml = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const name = this.names[i];
      let value: string;
      if (name === "unsubscribeUrl") value = unsubscribe;
      else if (name === "manageUrl") value = manage;
      else if (name === "contactId") value = contactId;
      else if (name === "email") value = recipient.email || valueOf(vars, name);
      else value = valueOf(vars, name);
      const need = this.needs[i];
      raw[i] = value;
      if (need & (1 << VAR_HTML)) html[i] = escapeHtml(value);
      if (need & (1 << VAR_LINE)) line[i] = /[\r\n]/.test(value) ? value.replace(/[\r\n]+/g, " ") : value;
      if (need & ((1 << URL_RAW) | (1 << URL_HTML))) {
        urlRaw[i] = encodeURIComponent(value);
        urlHtml[i] = escapeHtml(urlRaw[i]);
      }
    }
    // Indexed by slot kind: VAR_HTML, VAR_RAW, VAR_LINE, URL_HTML, URL_RAW.
    return { slots: [html, raw, line, urlHtml, urlRaw], token, urls, unsubscribeUrl: unsubscribe, manageUrl: manage };
  }

  /** Link and pixel URL prefixes depend only on publicUrl: computed once per value. */
  private urlsFor(publicUrl: string): UrlPrefixes {
    if (this.urls?.publicUrl === publicUrl) return this.urls;
    const base = linkBase(publicUrl);
    const clickRaw = this.linkTokens.map((link) => linkPrefix(base, "click", { link }));
    const openRaw = linkPrefix(base, "open", {});
    const unsubscribe = linkPrefix(base, "unsubscribe", {});
    this.urls = { publicUrl, clickRaw, clickHtml: clickRaw.map(escapeHtml), openRaw, openHtml: escapeHtml(openRaw), unsubscribe };
    return this.urls;
  }

  private variable(name: string, kind: number): number {
    let index = this.nameIndex.get(name);
    if (index === undefined) {
      index = this.names.push(name) - 1;
      this.nameIndex.set(name, index);
      this.needs.push(0);
    }
    this.needs[index] |= 1 << kind;
    return index;
  }

  private flatten(template: CompiledTemplate | undefined, mode: Mode): PreparedTemplate {
    const lits: string[] = [""];
    const kinds: number[] = [];
    const refs: number[] = [];
    const slot = (kind: number, ref: number) => {
      kinds.push(kind);
      refs.push(ref);
      lits.push("");
    };
    for (const seg of template?.segments ?? []) {
      const part = seg.part;
      switch (part.case) {
        case "literal":
          lits[lits.length - 1] += part.value;
          break;
        case "variable": {
          const kind = mode === "html" ? VAR_HTML : mode === "line" ? VAR_LINE : VAR_RAW;
          slot(kind, this.variable(part.value, kind));
          break;
        }
        case "urlVariable": {
          const kind = mode === "html" ? URL_HTML : URL_RAW;
          slot(kind, this.variable(part.value, kind));
          break;
        }
        case "link":
          if (!Number.isInteger(part.value) || part.value < 0 || part.value >= this.linkTokens.length) {
            throw new RangeError(`compiled message refers to link ${part.value} of ${this.linkTokens.length}`);
          }
          slot(mode === "html" ? LINK_HTML : LINK_RAW, part.value);
          break;
        case "openPixel":
          slot(mode === "html" ? PIXEL_HTML : PIXEL_RAW, 0);
          break;
        default:
          break;
      }
    }
    return { lits, kinds: Uint8Array.from(kinds), refs: Int32Array.from(refs) };
  }
}

// Byte templates: link and pixel URL prefixes are folded into the literals, leaving the
// recipient token as the slot (escaped for HTML, raw for text).
const TOKEN_HTML = 9;
const TOKEN_RAW = 10;
/** Longest line a 7bit body may hold, CRLF excluded (RFC 5322 2.1.1). */
const MAX_LINE = 998;

/** Text in wire form (UTF-8, CRLF) with what the 7bit decision needs to know about it. */
interface Piece {
  bytes: Buffer;
  ascii: boolean;
  /** Octets before the first line break; -1 when there is none. */
  head: number;
  /** Octets after the last line break. */
  tail: number;
  /** A line between two breaks of this piece is longer than MAX_LINE. */
  longInside: boolean;
  /** Starts with LF / ends with CR: glued to a neighbour ending in CR / starting with LF, the two make one CRLF. */
  startsLF: boolean;
  endsCR: boolean;
}

interface ByteTemplate {
  /** lits.length === kinds.length + 1, as in PreparedTemplate. */
  lits: Piece[];
  kinds: Uint8Array;
  refs: Int32Array;
}

function pieceOf(text: string): Piece {
  const startsLF = text.charCodeAt(0) === 10;
  const endsCR = text.charCodeAt(text.length - 1) === 13;
  const hasBreak = text.includes("\n") || text.includes("\r");
  const wire = hasBreak ? text.replace(/\r\n|\r|\n/g, "\r\n") : text;
  const bytes = Buffer.from(wire, "utf8");
  // Every non-ASCII character takes more than one octet. Line lengths below count UTF-16
  // units: the exact octets for ASCII text, and irrelevant otherwise (base64 anyway).
  const ascii = bytes.length === wire.length;
  if (!hasBreak) return { bytes, ascii, head: -1, tail: 0, longInside: false, startsLF, endsCR };
  const head = wire.indexOf("\r\n");
  const last = wire.lastIndexOf("\r\n");
  let longInside = false;
  for (let start = head + 2; start <= last; ) {
    const end = wire.indexOf("\r\n", start);
    if (end - start > MAX_LINE) longInside = true;
    start = end + 2;
  }
  return { bytes, ascii, head, tail: wire.length - last - 2, longInside, startsLF, endsCR };
}

/**
 * A whole text in wire form, by the same rule as the byte merge: for bodies that were
 * not merged to bytes (so a string and a byte merge of the same content go out alike).
 */
export function wireBody(text: string): WireBody {
  const p = pieceOf(text);
  const long = p.longInside || (p.head < 0 ? p.bytes.length > MAX_LINE : p.head > MAX_LINE || p.tail > MAX_LINE);
  return { bytes: p.bytes, sevenBit: p.ascii && !long };
}

function byteTemplate(t: PreparedTemplate, urls: UrlPrefixes): ByteTemplate {
  const lits = [t.lits[0]];
  const kinds: number[] = [];
  const refs: number[] = [];
  for (let i = 0; i < t.kinds.length; i++) {
    const kind = t.kinds[i];
    const ref = t.refs[i];
    if (kind <= URL_RAW) {
      kinds.push(kind);
      refs.push(ref);
    } else {
      lits[lits.length - 1] +=
        kind === LINK_HTML ? urls.clickHtml[ref] : kind === LINK_RAW ? urls.clickRaw[ref] : kind === PIXEL_HTML ? urls.openHtml : urls.openRaw;
      kinds.push(kind === LINK_HTML || kind === PIXEL_HTML ? TOKEN_HTML : TOKEN_RAW);
      refs.push(0);
    }
    lits.push(t.lits[i + 1]);
  }
  return { lits: lits.map(pieceOf), kinds: Uint8Array.from(kinds), refs: Int32Array.from(refs) };
}

/** One recipient's values as pieces, encoded on first use and shared by the HTML and text. */
class ValuePieces {
  private readonly byKind: Piece[][] = [];
  private tokenHtml?: Piece;
  private tokenRaw?: Piece;

  constructor(private readonly b: Bindings) {}

  get(kind: number, ref: number): Piece {
    if (kind === TOKEN_RAW) return (this.tokenRaw ??= pieceOf(this.b.token));
    if (kind === TOKEN_HTML) return (this.tokenHtml ??= pieceOf(escapeHtml(this.b.token)));
    const pieces = (this.byKind[kind] ??= []);
    return (pieces[ref] ??= pieceOf(this.b.slots[kind][ref]));
  }
}

/**
 * Concatenates literal and value pieces (one native copy each) and decides 7bit from the
 * pieces' line metadata, without scanning the literals again.
 */
function renderBytes(t: ByteTemplate, values: ValuePieces): WireBody {
  const { lits, kinds, refs } = t;
  const n = kinds.length;
  const parts = new Array<Buffer>(2 * n + 1);
  let count = 0;
  let total = 0;
  let ascii = true;
  let long = false;
  let line = 0; // octets of the line being built
  let prevCR = false;
  let rescan = false;
  for (let i = 0; i <= 2 * n; i++) {
    const p = i & 1 ? values.get(kinds[i >> 1], refs[i >> 1]) : lits[i >> 1];
    let bytes = p.bytes;
    if (bytes.length === 0) continue;
    if (!p.ascii) ascii = false;
    if (prevCR && p.startsLF) {
      // CR here + LF there was one line break: the CR already became CRLF, drop the LF's.
      bytes = bytes.subarray(2);
      rescan = true;
    } else if (p.head < 0) {
      line += bytes.length;
    } else {
      if (line + p.head > MAX_LINE) long = true;
      line = p.tail;
    }
    if (p.longInside) long = true;
    prevCR = p.endsCR;
    parts[count++] = bytes;
    total += bytes.length;
  }
  if (line > MAX_LINE) long = true;
  parts.length = count;
  // A single literal is returned as is: callers must not write into the bytes.
  const bytes = count === 1 ? parts[0] : Buffer.concat(parts, total);
  if (rescan && ascii) long = hasLongLine(bytes);
  return { bytes, sevenBit: ascii && !long };
}

/** Whether CRLF-separated bytes hold a line longer than MAX_LINE. */
function hasLongLine(bytes: Buffer): boolean {
  let start = 0;
  for (;;) {
    const cr = bytes.indexOf("\r\n", start, "latin1");
    const end = cr < 0 ? bytes.length : cr;
    if (end - start > MAX_LINE) return true;
    if (cr < 0) return false;
    start = cr + 2;
  }
}

function slotValue(kind: number, ref: number, b: Bindings): string {
  if (kind <= URL_RAW) return b.slots[kind][ref];
  if (kind === LINK_HTML) return b.urls.clickHtml[ref] + b.token;
  if (kind === LINK_RAW) return b.urls.clickRaw[ref] + b.token;
  if (kind === PIXEL_HTML) return b.urls.openHtml + b.token;
  return b.urls.openRaw + b.token;
}

/**
 * Joins into a flat string in one pass. A `+=` chain would return a rope that every
 * consumer (nodemailer, Buffer.from) must flatten later, which costs more in total.
 */
function renderString(t: PreparedTemplate, b: Bindings): string {
  const { lits, kinds, refs } = t;
  const n = kinds.length;
  if (n === 0) return lits[0];
  const parts = new Array<string>(2 * n + 1);
  parts[0] = lits[0];
  for (let i = 0; i < n; i++) {
    parts[2 * i + 1] = slotValue(kinds[i], refs[i], b);
    parts[2 * i + 2] = lits[i + 1];
  }
  return parts.join("");
}

/** Own properties only: `{{constructor}}` must not find Object.prototype.constructor. */
function valueOf(vars: Readonly<Record<string, unknown>>, name: string): string {
  return Object.hasOwn(vars, name) ? stringifyValue(vars[name]) : "";
}

export { stringifyValue };
