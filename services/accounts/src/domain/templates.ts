import { appError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { checkListLimit } from "@mailroom/records/validation.js";
import { normalizeEmail } from "@mailroom/records/address.js";
import {
  TEMPLATE_FORMATS, TEMPLATE_KINDS, TEMPLATE_STATUSES,
  type Page, type ReplyTo, type Template, type TemplateFormat, type TemplateKind, type TemplateStatus, type TemplateVersion,
} from "@mailroom/records/model.js";
import { checkTemplate, LiquidSyntaxError, usesLiquid } from "@mailroom/content/liquid/engine.js";
import { compileMjml } from "@mailroom/content/liquid/mjml.js";
import type { Senders } from "./senders.js";
import type { TemplateRepository } from "@mailroom/records/ports.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

export interface TemplateInput {
  name: string;
  subject: string;
  html: string;
  text?: string;
  previewText?: string;
  displayName?: string;
  /** Sender of templated sends: a verified address or on a verified domain ("" = default sender). */
  fromEmail?: string;
  fromName?: string;
  replyTo?: ReplyTo[];
  /** Default ACTIVE (on update: unchanged when absent). */
  status?: string;
  /** "template" (default), "layout" or "snippet"; fixed once created. */
  kind?: string;
  /** "liquid" (default) or "mjml" (`html` is MJML, compiled when saved). */
  format?: string;
  /** A layout of the workspace (kind "layout") framing this template. */
  layout?: string;
}

type ValidTemplate = Required<Omit<TemplateInput, "status" | "kind" | "format" | "layout">> & {
  status?: TemplateStatus;
  kind?: TemplateKind;
  format?: TemplateFormat;
  layout: string;
};

/** The content a template is saved with after its checks: MJML compiled, Liquid parsed. */
interface CheckedContent {
  html: string;
  source?: string;
  snippets: string[];
  liquid: boolean;
}

const VERSIONS_KEPT = 100;
const CONTENT_OUTPUT = /\{\{-?\s*content\s*-?\}\}/;
const MAX_REPLY_TO = 5;

export const TEMPLATE_HTML_MAX_BYTES = 500 * 1024;
/** Names travel in URL paths (/v1/templates/:name): keep them URL-safe. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const CURSOR = /^tpl_[0-9a-z]{26}$/;
const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** Merge variables in order of first appearance (the renderer owns the full rules). */
export function detectVariables(...texts: string[]): string[] {
  const found = new Set<string>();
  for (const t of texts) for (const m of t.matchAll(VARIABLE)) found.add(m[1]);
  return [...found];
}

export function checkTemplateName(name: string): string {
  if (typeof name !== "string" || !NAME.test(name)) {
    throw badRequest("invalid_template_name", `Template name ${JSON.stringify(String(name).slice(0, 120))} must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  }
  return name;
}

export function parseTemplateStatus(raw: unknown): TemplateStatus {
  if (typeof raw === "string" && (TEMPLATE_STATUSES as readonly string[]).includes(raw)) return raw as TemplateStatus;
  throw badRequest("invalid_template", `status ${JSON.stringify(raw)} is not one of ${TEMPLATE_STATUSES.join(", ")}`);
}

const oneLine = (field: string, value: unknown, max: number): string => {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string" || value.length > max || /[\r\n\u0000]/.test(value)) throw badRequest("invalid_template", `${field} must be one line of at most ${max} characters`);
  return value.trim();
};

/**
 * `kindKnown`: whether the kind is the input's (create, bootstrap: absent is "template", which
 * needs a subject); an update checks the subject once it knows the stored kind.
 */
export function validateTemplate(input: TemplateInput, kindKnown = true): ValidTemplate {
  const name = checkTemplateName(input?.name);
  const kind = input.kind ? oneOf("kind", input.kind, TEMPLATE_KINDS) : undefined;
  const format = input.format ? oneOf("format", input.format, TEMPLATE_FORMATS) : undefined;
  const layout = input.layout ? checkTemplateName(input.layout) : "";
  if (layout && kind && kind !== "template") throw badRequest("invalid_template", `only a template of kind "template" may name a layout`);
  const subject = typeof input.subject === "string" ? input.subject : "";
  // Layouts and snippets are pieces of other templates: only what is sent needs a subject.
  if (kindKnown && !subject.trim() && (kind ?? "template") === "template") throw badRequest("invalid_template", "subject is required");
  if (subject.length > 998 || /[\r\n\u0000]/.test(subject)) throw badRequest("invalid_template", "subject must be one line of at most 998 characters");
  const html = typeof input.html === "string" ? input.html : "";
  if (!html.trim()) throw badRequest("invalid_template", "html is required");
  if (Buffer.byteLength(html) > TEMPLATE_HTML_MAX_BYTES) {
    throw appError({ code: "template_html_too_large", httpStatus: 413, message: `html exceeds ${TEMPLATE_HTML_MAX_BYTES / 1024} KB` });
  }
  const text = input.text ?? "";
  const previewText = input.previewText ?? "";
  if (typeof text !== "string" || typeof previewText !== "string") throw badRequest("invalid_template", "text and previewText must be strings");
  if (Buffer.byteLength(text) > TEMPLATE_HTML_MAX_BYTES) throw appError({ code: "template_html_too_large", httpStatus: 413, message: "text is too large" });
  if (previewText.length > 1000 || /[\r\n\u0000]/.test(previewText)) throw badRequest("invalid_template", "previewText must be one line of at most 1000 characters");
  const displayName = oneLine("displayName", input.displayName, 200);
  const fromName = oneLine("fromName", input.fromName, 200);
  let fromEmail = oneLine("fromEmail", input.fromEmail, 320);
  if (fromEmail) {
    const normalized = normalizeEmail(fromEmail);
    if (!normalized) throw badRequest("invalid_from", `fromEmail "${fromEmail}" is not a valid email address`);
    fromEmail = normalized;
  }
  const replyTo = input.replyTo ?? [];
  if (!Array.isArray(replyTo) || replyTo.length > MAX_REPLY_TO) throw badRequest("invalid_template", `replyTo must be a list of at most ${MAX_REPLY_TO} addresses`);
  const replies = replyTo.map((r, i) => {
    const email = normalizeEmail(typeof r?.email === "string" ? r.email : "");
    if (!email) throw badRequest("invalid_template", `replyTo[${i}].email is not a valid email address`);
    const replyName = oneLine(`replyTo[${i}].name`, r.name, 200);
    return replyName ? { email, name: replyName } : { email };
  });
  const status = input.status ? parseTemplateStatus(input.status) : undefined;
  return {
    name, subject, html, text, previewText, displayName, fromEmail, fromName, replyTo: replies, layout,
    ...(status ? { status } : {}), ...(kind ? { kind } : {}), ...(format ? { format } : {}),
  };
}

function oneOf<T extends string>(field: string, raw: unknown, allowed: readonly T[]): T {
  if (typeof raw === "string" && (allowed as readonly string[]).includes(raw)) return raw as T;
  throw badRequest("invalid_template", `${field} ${JSON.stringify(raw)} is not one of ${allowed.join(", ")}`);
}

/** 400 invalid_template naming the field, line and column (DESIGN §10.2). */
function invalidAt(field: string, line: number, column: number, reason: string) {
  return badRequest("invalid_template", `${field}, line ${line}, column ${column}: ${reason}`, {
    extra: { field: JSON.stringify(field), line: JSON.stringify(line), column: JSON.stringify(column), reason: JSON.stringify(reason) },
  });
}

/** Line and column (1-based) of `needle` in `text`, or 1:1. */
function positionOf(text: string, needle: RegExp): { line: number; column: number } {
  const m = needle.exec(text);
  if (!m) return { line: 1, column: 1 };
  const before = text.slice(0, m.index).split("\n");
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

const kindOf = (t: Pick<Template, "kind">): TemplateKind => t.kind ?? "template";
export const templateVersion = (t: Pick<Template, "version">): number => t.version ?? 1;

/** A template's status (templates made before statuses are ACTIVE). */
export const templateStatus = (t: Template): TemplateStatus => t.status ?? "ACTIVE";

/** Stored templates, named uniquely per workspace. */
export class Templates {
  constructor(
    private readonly repo: TemplateRepository,
    private readonly workspaces: Workspaces,
    private readonly senders: Pick<Senders, "check">,
    private readonly now: Clock = systemClock,
  ) {}

  /** A template's own sender must be one the workspace may send from (as for raw sends). */
  private async checkSender(workspaceId: string, fromEmail: string): Promise<void> {
    if (!fromEmail) return;
    const check = await this.senders.check(workspaceId, fromEmail);
    if (!check.allowed) {
      throw badRequest("invalid_from", `fromEmail ${fromEmail} is not a verified address or on a verified domain of this workspace`, {
        allowedEmails: check.allowedEmails,
        allowedDomains: check.allowedDomains,
      });
    }
  }

  /**
   * MJML compiled to HTML, then every field parsed as Liquid (strict filters), the layout and
   * the snippets rendered looked up: each refusal a 400 invalid_template with line and column.
   */
  private async checkContent(workspaceId: string, t: ValidTemplate, kind: TemplateKind, format: TemplateFormat): Promise<CheckedContent> {
    let html = t.html;
    let source: string | undefined;
    if (format === "mjml") {
      const compiled = await compileMjml(t.html);
      if ("error" in compiled) throw invalidAt("html", compiled.error.line, 1, `MJML: ${compiled.error.message}`);
      source = t.html;
      html = compiled.html;
    }
    const fields = { subject: t.subject, html, text: t.text, previewText: t.previewText };
    let snippets: Set<string>;
    try {
      snippets = checkTemplate(fields, (field) => (field === "html" ? "html" : "raw"));
    } catch (err) {
      if (!(err instanceof LiquidSyntaxError)) throw err;
      // An MJML template's Liquid is found in the compiled HTML: point at the source line instead when it can be found.
      throw invalidAt(err.field, err.line, err.column, err.reason);
    }
    if (kind === "layout" && !CONTENT_OUTPUT.test(html)) throw invalidAt("html", 1, 1, "a layout must write {{ content }} where the template goes");
    if (t.layout) {
      const layout = await this.repo.findByName(workspaceId, t.layout);
      if (!layout || kindOf(layout) !== "layout") throw badRequest("invalid_template", `layout "${t.layout}" is not a layout of this workspace (create it with kind "layout")`);
    }
    for (const name of snippets) {
      const snippet = await this.repo.findByName(workspaceId, name);
      if (snippet && kindOf(snippet) === "snippet") continue;
      const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const [field, text] = Object.entries(fields).find(([, v]) => new RegExp(`render\\s+["']${escaped}["']`).test(v)) ?? ["html", html];
      const at = positionOf(text, new RegExp(`\\{%-?\\s*render\\s+["']${escaped}["']`));
      throw invalidAt(field, at.line, at.column, `snippet "${name}" does not exist (create a template of kind "snippet" named so)`);
    }
    const liquid = Boolean(t.layout) || snippets.size > 0 || usesLiquid(t.subject, html, t.text, t.previewText);
    return { html, ...(source !== undefined ? { source } : {}), snippets: [...snippets], liquid };
  }

  private async keepVersion(doc: Template): Promise<void> {
    const version: TemplateVersion = {
      _id: `${doc._id}:${templateVersion(doc)}`,
      workspaceId: doc.workspaceId,
      templateId: doc._id,
      version: templateVersion(doc),
      subject: doc.subject,
      html: doc.html,
      text: doc.text,
      previewText: doc.previewText,
      format: doc.format ?? "liquid",
      ...(doc.source !== undefined ? { source: doc.source } : {}),
      ...(doc.layout ? { layout: doc.layout } : {}),
      createdAt: doc.updatedAt,
    };
    await this.repo.addVersion(version);
  }

  async create(workspaceId: string, input: TemplateInput): Promise<Template> {
    const t = validateTemplate(input);
    await this.workspaces.get(workspaceId);
    await this.checkSender(workspaceId, t.fromEmail);
    const kind = t.kind ?? "template";
    if (!t.subject.trim() && kind === "template") throw badRequest("invalid_template", "subject is required");
    const format = t.format ?? "liquid";
    const checked = await this.checkContent(workspaceId, t, kind, format);
    const at = this.now();
    const { kind: _k, format: _f, layout, ...fields } = t;
    const doc: Template = {
      _id: newId("tpl"),
      workspaceId,
      ...fields,
      ...checked,
      kind,
      format,
      ...(layout ? { layout } : {}),
      version: 1,
      status: t.status ?? "ACTIVE",
      variables: detectVariables(t.subject, t.previewText, checked.html, t.text),
      createdAt: at,
      updatedAt: at,
    };
    if (!(await this.repo.insert(doc))) throw conflict("template_exists", `A template named "${t.name}" already exists`);
    await this.keepVersion(doc);
    return doc;
  }

  async get(workspaceId: string, name: string): Promise<Template> {
    requireWorkspaceId(workspaceId);
    const doc = typeof name === "string" && NAME.test(name) ? await this.repo.findByName(workspaceId, name) : null;
    if (!doc) throw notFound("template_not_found", `Template "${String(name).slice(0, 120)}" not found`);
    return doc;
  }

  async getById(workspaceId: string, id: string): Promise<Template> {
    requireWorkspaceId(workspaceId);
    const doc = typeof id === "string" && CURSOR.test(id) ? await this.repo.findById(workspaceId, id) : null;
    if (!doc) throw notFound("template_not_found", `Template ${String(id).slice(0, 120)} not found`);
    return doc;
  }

  /**
   * Replaces subject, html, text, preview text, display name and sender of an existing
   * template (absent ones become empty); the status changes only when given.
   */
  async update(workspaceId: string, input: TemplateInput): Promise<Template> {
    const t = validateTemplate(input, false);
    const existing = await this.get(workspaceId, t.name);
    const kind = kindOf(existing);
    if (t.kind && t.kind !== kind) throw badRequest("invalid_template", `kind cannot change (this is a ${kind}); create a new template instead`);
    if (t.layout && kind !== "template") throw badRequest("invalid_template", `only a template of kind "template" may name a layout`);
    if (!t.subject.trim() && kind === "template") throw badRequest("invalid_template", "subject is required");
    await this.checkSender(workspaceId, t.fromEmail);
    const format = t.format ?? "liquid";
    const checked = await this.checkContent(workspaceId, t, kind, format);
    const set = {
      subject: t.subject, html: checked.html, text: t.text, previewText: t.previewText, variables: detectVariables(t.subject, t.previewText, checked.html, t.text),
      displayName: t.displayName, fromEmail: t.fromEmail, fromName: t.fromName, replyTo: t.replyTo, status: t.status ?? templateStatus(existing),
      format, source: checked.source ?? "", layout: t.layout, snippets: checked.snippets, liquid: checked.liquid,
    };
    const stored = {
      ...existing, displayName: existing.displayName ?? "", fromEmail: existing.fromEmail ?? "", fromName: existing.fromName ?? "", replyTo: existing.replyTo ?? [], status: templateStatus(existing),
      format: existing.format ?? "liquid", source: existing.source ?? "", layout: existing.layout ?? "", snippets: existing.snippets ?? [], liquid: existing.liquid ?? false,
    };
    const unchanged = (Object.keys(set) as Array<keyof typeof set>).every((k) => JSON.stringify(stored[k]) === JSON.stringify(set[k]));
    if (unchanged) return existing;
    const updated = await this.repo.update(workspaceId, existing._id, { ...set, kind, version: templateVersion(existing) + 1, updatedAt: this.now() });
    if (!updated) throw notFound("template_not_found", `Template "${t.name}" not found`);
    await this.keepVersion(updated);
    return updated;
  }

  /**
   * Unsaved content checked as a save checks it (MJML compiled, Liquid parsed, its layout and
   * snippets found: 400 invalid_template with line and column), stored nowhere: the editor's
   * live preview renders it. `name`, when given, is the template being edited (its kind
   * applies unless the draft names one).
   */
  async draft(workspaceId: string, name: string, input: Omit<TemplateInput, "name">): Promise<Template> {
    requireWorkspaceId(workspaceId);
    const existing = name ? await this.get(workspaceId, name) : undefined;
    const t = validateTemplate({ ...input, name: existing?.name ?? "draft" }, false);
    const kind = t.kind ?? (existing ? kindOf(existing) : "template");
    if (t.layout && kind !== "template") throw badRequest("invalid_template", `only a template of kind "template" may name a layout`);
    const format = t.format ?? "liquid";
    const checked = await this.checkContent(workspaceId, t, kind, format);
    const at = this.now();
    return {
      _id: existing?._id ?? "", workspaceId, name: t.name, subject: t.subject, html: checked.html, text: t.text, previewText: t.previewText,
      variables: detectVariables(t.subject, t.previewText, checked.html, t.text), kind, format, layout: t.layout,
      snippets: checked.snippets, liquid: checked.liquid, createdAt: at, updatedAt: at,
    };
  }

  /** Saved versions, newest first; a template saved before versions has its current content as version 1. */
  async versions(workspaceId: string, name: string): Promise<TemplateVersion[]> {
    const doc = await this.get(workspaceId, name);
    const kept = await this.repo.versions(workspaceId, doc._id, VERSIONS_KEPT);
    if (!kept.some((v) => v.version === templateVersion(doc))) {
      kept.unshift({
        _id: `${doc._id}:${templateVersion(doc)}`, workspaceId, templateId: doc._id, version: templateVersion(doc),
        subject: doc.subject, html: doc.html, text: doc.text, previewText: doc.previewText, format: doc.format ?? "liquid",
        ...(doc.source ? { source: doc.source } : {}), ...(doc.layout ? { layout: doc.layout } : {}), createdAt: doc.updatedAt,
      });
    }
    return kept;
  }

  /** Saves an earlier version's content as the newest version (its checks run again: a snippet may be gone). */
  async restore(workspaceId: string, name: string, version: number): Promise<Template> {
    const doc = await this.get(workspaceId, name);
    const old = Number.isInteger(version) && version > 0 ? (await this.versions(workspaceId, name)).find((v) => v.version === version) : undefined;
    if (!old) throw notFound("template_version_not_found", `Template "${name}" has no version ${String(version).slice(0, 20)}`);
    return this.update(workspaceId, {
      name,
      subject: old.subject,
      html: old.format === "mjml" && old.source ? old.source : old.html,
      text: old.text,
      previewText: old.previewText,
      format: old.format,
      layout: old.layout ?? "",
      displayName: doc.displayName ?? "",
      fromEmail: doc.fromEmail ?? "",
      fromName: doc.fromName ?? "",
      replyTo: doc.replyTo ?? [],
    });
  }

  /**
   * What a send renders a template with: its layout and every snippet it, its layout or a
   * snippet renders (found by name, breadth first, each once).
   */
  async includes(workspaceId: string, template: Template): Promise<Template[]> {
    const found: Template[] = [];
    const seen = new Set<string>();
    const queue: string[] = [...(template.snippets ?? [])];
    if (template.layout) {
      const layout = await this.repo.findByName(workspaceId, template.layout);
      if (layout && kindOf(layout) === "layout") {
        found.push(layout);
        queue.push(...(layout.snippets ?? []));
      }
    }
    while (queue.length && seen.size < 100) {
      const name = queue.shift()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const snippet = await this.repo.findByName(workspaceId, name);
      if (!snippet || kindOf(snippet) !== "snippet") continue;
      found.push(snippet);
      queue.push(...(snippet.snippets ?? []));
    }
    return found;
  }

  /**
   * Deletes a template with its versions. A layout or snippet that another template still uses
   * is kept: 409 template_in_use naming those templates (their sends would fail otherwise).
   */
  async delete(workspaceId: string, name: string): Promise<void> {
    const doc = await this.get(workspaceId, name);
    const kind = kindOf(doc);
    if (kind !== "template") {
      const users = (await this.repo.usersOf(workspaceId, doc.name)).map((t) => t.name);
      if (users.length) {
        const shown = users.slice(0, 20).map((n) => `"${n}"`).join(", ") + (users.length > 20 ? ` and ${users.length - 20} more` : "");
        throw appError({
          code: "template_in_use",
          httpStatus: 409,
          message: `The ${kind} "${doc.name}" is used by ${shown}: change ${users.length === 1 ? "it" : "them"} first`,
          extra: { usedBy: JSON.stringify(users) },
        });
      }
    }
    await this.repo.delete(workspaceId, doc._id);
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string; status?: string; newestFirst?: boolean; kind?: string } = {}): Promise<Page<Template>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const status = opts.status ? parseTemplateStatus(opts.status) : undefined;
    const kind = opts.kind ? oneOf("kind", opts.kind, TEMPLATE_KINDS) : undefined;
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1, status, newestFirst: opts.newestFirst, kind });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
