import { z } from "zod";
import type { Template } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { iso } from "@mailroom/http/contacts-schema.js";
import { jsonObject } from "../schemas/email.js";

/** Public JSON of stored templates (/v1/templates); content rules live in the accounts unit. */

const content = {
  subject: z.string().meta({
    description:
      "One line of at most 998 characters (else 400 `invalid_template`); Liquid (`{{ firstName | default: \"there\" }}`). Required for kind `template`; layouts and snippets may leave it empty.",
  }),
  html: z.string().min(1, "html is required").meta({
    description:
      "Liquid HTML (`{% if %}`, `{% for %}`, filters, `{% render \"snippet\" %}`), or MJML with `format: \"mjml\"`. At most 500 KB (else 413 `template_html_too_large`). A syntax error is 400 `invalid_template` with `line` and `column`.",
  }),
  text: z.string().nullish(),
  previewText: z.string().nullish(),
  displayName: z.string().max(200).nullish().meta({ description: "Shown name (default: the name)." }),
  fromEmail: z.string().max(320).nullish().meta({
    description: "Sender of templated sends: a verified address or one on a verified domain (else 400 `invalid_from` with `allowedEmails`/`allowedDomains`). Absent: the workspace's first verified address.",
  }),
  fromName: z.string().max(200).nullish(),
  replyTo: z.array(z.strictObject({ email: z.string().max(320), name: z.string().max(200).optional() })).max(5).nullish().meta({
    description: "Reply-to addresses of templated sends; a send's own `replyTo` overrides them.",
  }),
  status: z.enum(["DRAFT", "ACTIVE", "ARCHIVED", "PAUSED"]).nullish().meta({ description: "Default ACTIVE (on PUT: unchanged when absent)." }),
  kind: z.enum(["template", "layout", "snippet"]).nullish().meta({
    description: "`template` (default: sent by name), `layout` (frames templates: writes `{{ content }}`) or `snippet` (`{% render \"name\" %}`). Fixed once created.",
  }),
  format: z.enum(["liquid", "mjml"]).nullish().meta({ description: "`liquid` (default) or `mjml`: `html` is MJML, compiled to HTML when saved (the source is kept as `source`)." }),
  layout: z.string().max(100).nullish().meta({ description: "Name of a template of kind `layout` whose `{{ content }}` receives this one." }),
};

/** The request's content fields as TemplateService's TemplateInput (absent = empty). */
export function templateInput(name: string, body: z.infer<typeof replaceTemplateSchema>) {
  return {
    name,
    subject: body.subject,
    html: body.html,
    text: body.text ?? "",
    previewText: body.previewText ?? "",
    displayName: body.displayName ?? "",
    fromEmail: body.fromEmail ?? "",
    fromName: body.fromName ?? "",
    replyTo: (body.replyTo ?? []).map((r) => ({ email: r.email, name: r.name ?? "" })),
    status: body.status ?? "",
    kind: body.kind ?? "",
    format: body.format ?? "",
    layout: body.layout ?? "",
  };
}

export const createTemplateSchema = z
  .object({
    name: z.string().min(1, "name is required").max(100).meta({
      description: "Unique per workspace; 1-100 letters, digits, `.`, `_` or `-`, starting with a letter or digit (else 400 `invalid_template_name`).",
    }),
    ...content,
  })
  .strict()
  .meta({ id: "CreateTemplateRequest" });

/** PUT replaces the content; `name`, when given, must be the one in the path. */
export const replaceTemplateSchema = z
  .object({
    name: z.string().optional().meta({ description: "Optional; when given it must be the name in the path (templates cannot be renamed)." }),
    ...content,
  })
  .strict()
  .meta({ id: "ReplaceTemplateRequest" });

export const listTemplatesQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
    cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
    kind: z.enum(["template", "layout", "snippet"]).optional().meta({ description: "Only templates of this kind (default: every kind)." }),
  })
  .strict();

export const templateNameParams = z.object({ name: z.string() });

export function templateJson(t: Template) {
  return {
    id: t.id,
    name: t.name,
    subject: t.subject,
    html: t.html,
    text: t.text || null,
    source: t.source || null,
    previewText: t.previewText || null,
    variables: t.variables,
    displayName: t.displayName || t.name,
    fromEmail: t.fromEmail || null,
    fromName: t.fromName || null,
    replyTo: t.replyTo.map((r) => (r.name ? { email: r.email, name: r.name } : { email: r.email })),
    status: (t.status || "ACTIVE") as "DRAFT" | "ACTIVE" | "ARCHIVED" | "PAUSED",
    kind: (t.kind || "template") as "template" | "layout" | "snippet",
    format: (t.format || "liquid") as "liquid" | "mjml",
    layout: t.layout || null,
    version: t.version || 1,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
  };
}

/** List items leave the bodies out: fetch one template for its html and text. */
export function templateSummaryJson(t: Template) {
  const { html: _html, text: _text, source: _source, ...summary } = templateJson(t);
  return summary;
}

const timestamp = z.iso.datetime().nullable();
const summaryFields = {
  id: z.string().regex(/^tpl_/).meta({ description: "`tpl_` followed by a lowercase ULID." }),
  name: z.string(),
  subject: z.string(),
  previewText: z.string().nullable(),
  variables: z.array(z.string()).meta({
    description: "Merge variables found in subject, preview text, HTML and text, in order of first appearance.",
  }),
  displayName: z.string(),
  fromEmail: z.string().nullable().meta({ description: "The template's sender; null: the workspace's first verified address." }),
  fromName: z.string().nullable(),
  replyTo: z.array(z.strictObject({ email: z.string(), name: z.string().optional() })),
  status: z.enum(["DRAFT", "ACTIVE", "ARCHIVED", "PAUSED"]),
  kind: z.enum(["template", "layout", "snippet"]),
  format: z.enum(["liquid", "mjml"]),
  layout: z.string().nullable().meta({ description: "The layout framing it; null: none." }),
  version: z.number().int().min(1).meta({ description: "1 when created, one more at every saved change (`GET /v1/templates/{name}/versions`)." }),
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const templateSchema = z
  .strictObject({
    ...summaryFields,
    html: z.string().meta({ description: "The HTML sent (an MJML template's compiled HTML)." }),
    text: z.string().nullable(),
    source: z.string().nullable().meta({ description: "An MJML template's MJML; null for Liquid templates." }),
  })
  .meta({ id: "Template" });

const templateSummarySchema = z
  .strictObject(summaryFields)
  .meta({ id: "TemplateSummary", description: "A template without its bodies (html, text): fetch one template for those." });

export const templateResponseSchema = z.strictObject({ template: templateSchema }).meta({ id: "TemplateResponse" });

export const templateListSchema = z
  .strictObject({
    templates: z.strictObject({
      items: z.array(templateSummarySchema),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last page." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "TemplateList" });

export const templateDeletedSchema = z.strictObject({ deleted: z.literal(true), name: z.string() }).meta({ id: "TemplateDeleted" });

/** POST /v1/templates/:name/render */
export const renderTemplateSchema = z
  .strictObject({
    variables: jsonObject.nullish().meta({ description: "Values by name; nested objects and lists allowed (`order.items`), at most 16 levels deep. Laid over the contact's." }),
    contactId: z.string().max(100).nullish().meta({ description: "A contact of the workspace whose properties are the values (else 404 `contact_not_found`)." }),
  })
  .meta({ id: "RenderTemplateRequest" });

/** POST /v1/templates/render: unsaved content, rendered as the editor's live preview. */
export const renderDraftSchema = z
  .strictObject({
    name: z.string().max(100).nullish().meta({ description: "The template being edited, when it exists (its kind applies unless `kind` is given; else 404 `template_not_found`)." }),
    subject: content.subject.optional(),
    html: content.html,
    text: content.text,
    previewText: content.previewText,
    kind: content.kind,
    format: content.format,
    layout: content.layout,
    variables: renderTemplateSchema.shape.variables,
    contactId: renderTemplateSchema.shape.contactId,
  })
  .meta({ id: "RenderTemplateDraftRequest" });

export const renderedTemplateSchema = z
  .strictObject({
    subject: z.string(),
    html: z.string(),
    text: z.string().meta({ description: "The template's text part rendered, or text generated from the HTML when it has none." }),
    previewText: z.string(),
  })
  .meta({ id: "RenderedTemplate", description: "As a send renders it, without tracking; unsubscribe and manage links are `#`." });

export const templateVersionSchema = z
  .strictObject({
    version: z.number().int().min(1),
    subject: z.string(),
    html: z.string(),
    text: z.string().nullable(),
    previewText: z.string().nullable(),
    format: z.enum(["liquid", "mjml"]),
    source: z.string().nullable(),
    layout: z.string().nullable(),
    createdAt: timestamp,
  })
  .meta({ id: "TemplateVersion" });

export const templateVersionsSchema = z
  .strictObject({ versions: z.array(templateVersionSchema).meta({ description: "Newest first (at most 100)." }) })
  .meta({ id: "TemplateVersionList" });

// A version that is not a whole number from 1 cannot exist: 404, as any unknown version (never a 400 that
// would tell a caller more about someone else's template than an unknown one does).
export const templateVersionParams = z.object({ name: z.string(), version: z.string().max(100) });

/** The version a path names, or undefined when none can exist by that name. */
export function versionOfParam(text: string): number | undefined {
  const n = /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : NaN;
  return n <= 2_147_483_647 ? n : undefined;
}
