import { appError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { checkListLimit } from "./contacts.js";
import { normalizeEmail } from "./address.js";
import { TEMPLATE_STATUSES, type Page, type ReplyTo, type Template, type TemplateStatus } from "./model.js";
import type { Senders } from "./senders.js";
import type { TemplateRepository } from "./ports.js";
import type { Workspaces } from "./workspaces.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

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
}

type ValidTemplate = Required<Omit<TemplateInput, "status">> & { status?: TemplateStatus };
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

export function validateTemplate(input: TemplateInput): ValidTemplate {
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
  return { name, subject, html, text, previewText, displayName, fromEmail, fromName, replyTo: replies, ...(status ? { status } : {}) };
}

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

  async create(workspaceId: string, input: TemplateInput): Promise<Template> {
    const t = validateTemplate(input);
    await this.workspaces.get(workspaceId);
    await this.checkSender(workspaceId, t.fromEmail);
    const at = this.now();
    const doc: Template = {
      _id: newId("tpl"),
      workspaceId,
      ...t,
      status: t.status ?? "ACTIVE",
      variables: detectVariables(t.subject, t.previewText, t.html, t.text),
      createdAt: at,
      updatedAt: at,
    };
    if (!(await this.repo.insert(doc))) throw conflict("template_exists", `A template named "${t.name}" already exists`);
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
    const t = validateTemplate(input);
    const existing = await this.get(workspaceId, t.name);
    await this.checkSender(workspaceId, t.fromEmail);
    const set = {
      subject: t.subject, html: t.html, text: t.text, previewText: t.previewText, variables: detectVariables(t.subject, t.previewText, t.html, t.text),
      displayName: t.displayName, fromEmail: t.fromEmail, fromName: t.fromName, replyTo: t.replyTo, status: t.status ?? templateStatus(existing),
    };
    const stored = { ...existing, displayName: existing.displayName ?? "", fromEmail: existing.fromEmail ?? "", fromName: existing.fromName ?? "", replyTo: existing.replyTo ?? [], status: templateStatus(existing) };
    const unchanged = (Object.keys(set) as Array<keyof typeof set>).every((k) => JSON.stringify(stored[k]) === JSON.stringify(set[k]));
    if (unchanged) return existing;
    const updated = await this.repo.update(workspaceId, existing._id, { ...set, updatedAt: this.now() });
    if (!updated) throw notFound("template_not_found", `Template "${t.name}" not found`);
    return updated;
  }

  async delete(workspaceId: string, name: string): Promise<void> {
    const doc = await this.get(workspaceId, name);
    await this.repo.delete(workspaceId, doc._id);
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string; status?: string; newestFirst?: boolean } = {}): Promise<Page<Template>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const status = opts.status ? parseTemplateStatus(opts.status) : undefined;
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1, status, newestFirst: opts.newestFirst });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
