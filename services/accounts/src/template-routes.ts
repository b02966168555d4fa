import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import type { Templates } from "./domain/templates.js";
import type { TemplatePreviews } from "./domain/template-previews.js";
import { templateToPb } from "./routes.js";

/** Proto ⇄ domain mapping of TemplateService (previews and version history, DESIGN §10.2). */
export function templateService(templates: Templates, previews: TemplatePreviews): ServiceImpl<typeof TemplateService> {
  return {
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

export function templateRoutes(templates: Templates, previews: TemplatePreviews) {
  return (router: ConnectRouter) => {
    router.service(TemplateService, templateService(templates, previews));
  };
}
