import { appError, badRequest, conflict, notFound } from "../../kit/src/errors.js";
import { newId } from "../../kit/src/ids.js";
import { DuplicateKeyError } from "../../kit/src/store/port.js";
import { checkListLimit, type Page } from "./contacts.js";
import type { DirectoryRepos, TemplateDoc } from "./store.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export interface TemplateInput {
  name: string;
  subject: string;
  html: string;
  text?: string;
  previewText?: string;
}

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

export function validateTemplate(input: TemplateInput): Required<TemplateInput> {
  const name = checkTemplateName(input?.name);
  const subject = typeof input.subject === "string" ? input.subject : "";
  if (!subject.trim()) throw badRequest("invalid_template", "subject is required");
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
  return { name, subject, html, text, previewText };
}

/** Stored templates, named uniquely per workspace. */
export class Templates {
  constructor(
    private readonly repos: DirectoryRepos,
    private readonly workspaces: Workspaces,
    private readonly now: Clock = systemClock,
  ) {}

  async create(workspaceId: string, input: TemplateInput): Promise<TemplateDoc> {
    const t = validateTemplate(input);
    await this.workspaces.get(workspaceId);
    const at = this.now();
    const doc: TemplateDoc = {
      _id: newId("tpl"),
      workspaceId,
      ...t,
      variables: detectVariables(t.subject, t.previewText, t.html, t.text),
      createdAt: at,
      updatedAt: at,
    };
    try {
      await this.repos.templates.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw conflict("template_exists", `A template named "${t.name}" already exists`);
      throw err;
    }
    return doc;
  }

  async get(workspaceId: string, name: string): Promise<TemplateDoc> {
    requireWorkspaceId(workspaceId);
    const doc = typeof name === "string" && NAME.test(name) ? await this.repos.templates.findOne({ workspaceId, name }) : null;
    if (!doc) throw notFound("template_not_found", `Template "${String(name).slice(0, 120)}" not found`);
    return doc;
  }

  /** Replaces subject, html, text and preview text of an existing template. */
  async update(workspaceId: string, input: TemplateInput): Promise<TemplateDoc> {
    const t = validateTemplate(input);
    const existing = await this.get(workspaceId, t.name);
    const set = { subject: t.subject, html: t.html, text: t.text, previewText: t.previewText, variables: detectVariables(t.subject, t.previewText, t.html, t.text) };
    const unchanged = (Object.keys(set) as Array<keyof typeof set>).every((k) => JSON.stringify(existing[k]) === JSON.stringify(set[k]));
    if (unchanged) return existing;
    const updated = await this.repos.templates.findOneAndUpdate(
      { _id: existing._id, workspaceId },
      { $set: { ...set, updatedAt: this.now() } },
      { returnDocument: "after" },
    );
    if (!updated) throw notFound("template_not_found", `Template "${t.name}" not found`);
    return updated;
  }

  async delete(workspaceId: string, name: string): Promise<void> {
    const doc = await this.get(workspaceId, name);
    await this.repos.templates.deleteOne({ _id: doc._id, workspaceId });
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<TemplateDoc>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const filter: Record<string, unknown> = { workspaceId };
    if (opts.cursor) filter._id = { $gt: opts.cursor };
    const docs = await this.repos.templates.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
