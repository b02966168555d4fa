import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { TemplateService, type TemplateInput as PbTemplateInput, type TemplateSchema } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { Template } from "@mailroom/records/model.js";
import { templateStatus, templateVersion, type Templates } from "./domain/templates.js";
import type { TemplatePreviews } from "./domain/template-previews.js";
import type { Workspaces } from "./domain/workspaces.js";

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

export function templateToPb(t: Template): MessageInitShape<typeof TemplateSchema> {
  return {
    id: t._id,
    name: t.name,
    subject: t.subject,
    html: t.html,
    text: t.text,
    previewText: t.previewText,
    variables: t.variables,
    createdAt: ts(t.createdAt),
    updatedAt: ts(t.updatedAt),
    fromEmail: t.fromEmail ?? "",
    fromName: t.fromName ?? "",
    replyTo: (t.replyTo ?? []).map((r) => ({ email: r.email, name: r.name ?? "" })),
    status: templateStatus(t),
    displayName: t.displayName ?? "",
    kind: t.kind ?? "template",
    format: t.format ?? "liquid",
    layout: t.layout ?? "",
    version: templateVersion(t),
    source: t.source ?? "",
    snippets: t.snippets ?? [],
    liquid: t.liquid ?? false,
  };
}

function templateFromPb(t: PbTemplateInput | undefined) {
  if (!t) throw badRequest("invalid_request", "template is required");
  return {
    name: t.name, subject: t.subject, html: t.html, text: t.text, previewText: t.previewText,
    displayName: t.displayName, fromEmail: t.fromEmail, fromName: t.fromName,
    replyTo: t.replyTo.map((r) => (r.name ? { email: r.email, name: r.name } : { email: r.email })), status: t.status || undefined,
    kind: t.kind || undefined, format: t.format || undefined, layout: t.layout,
  };
}

/** Proto ⇄ domain mapping of TemplateService: stored templates, previews and version history (DESIGN §10.2). */
export function templateService(templates: Templates, previews: TemplatePreviews, workspaces: Pick<Workspaces, "get">): ServiceImpl<typeof TemplateService> {
  const dir = { templates, workspaces };
  return {
    async createTemplate(req) {
      return { template: templateToPb(await dir.templates.create(req.workspaceId, templateFromPb(req.template))) };
    },
    async getTemplate(req) {
      const t = req.templateId ? await dir.templates.getById(req.workspaceId, req.templateId) : await dir.templates.get(req.workspaceId, req.name);
      // Content the byte merge serves needs nothing more: no lookups on that send path.
      if (!req.withIncludes || !t.liquid) return { template: templateToPb(t) };
      const [includes, workspace] = await Promise.all([dir.templates.includes(req.workspaceId, t), dir.workspaces.get(req.workspaceId)]);
      return { template: templateToPb(t), includes: includes.map(templateToPb), timeZone: workspace.timezone };
    },
    async updateTemplate(req) {
      return { template: templateToPb(await dir.templates.update(req.workspaceId, templateFromPb(req.template))) };
    },
    async deleteTemplate(req) {
      await dir.templates.delete(req.workspaceId, req.name);
      return {};
    },
    async listTemplates(req) {
      const page = await dir.templates.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor, status: req.status || undefined, newestFirst: req.newestFirst, kind: req.kind || undefined });
      return { templates: page.items.map(templateToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async renderTemplate(req) {
      const d = req.draft;
      const draft = d
        ? await templates.draft(req.workspaceId, req.name, {
            subject: d.subject, html: d.html, text: d.text, previewText: d.previewText,
            ...(d.format ? { format: d.format } : {}), ...(d.layout ? { layout: d.layout } : {}), ...(d.kind ? { kind: d.kind } : {}),
          })
        : undefined;
      const r = await previews.render(req.workspaceId, req.name, (req.variables ?? {}) as Record<string, unknown>, req.contactId || undefined, draft);
      return { subject: r.subject, html: r.html, text: r.text, previewText: r.previewText };
    },
    async listTemplateVersions(req) {
      const versions = await templates.versions(req.workspaceId, req.name);
      return {
        versions: versions.map((v) => ({
          version: v.version,
          subject: v.subject,
          html: v.html,
          text: v.text,
          previewText: v.previewText,
          format: v.format,
          source: v.source ?? "",
          layout: v.layout ?? "",
          createdAt: timestampFromDate(new Date(v.createdAt)),
        })),
      };
    },
    async restoreTemplateVersion(req) {
      return { template: templateToPb(await templates.restore(req.workspaceId, req.name, req.version)) };
    },
  };
}

export function templateRoutes(templates: Templates, previews: TemplatePreviews, workspaces: Pick<Workspaces, "get">) {
  return (router: ConnectRouter) => {
    router.service(TemplateService, templateService(templates, previews, workspaces));
  };
}
