import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";
import { notFound } from "@mailroom/kit/errors.js";
import { templateJson, templateNameParams, templateResponseSchema, templateVersionParams, templateVersionsSchema, versionOfParam } from "./templates-schema.js";

const errorCodes = { template_not_found: "not_found" };

/**
 * GET /v1/templates/:name/versions -> { versions: [...] } (newest first)
 * POST /v1/templates/:name/versions/:version/restore -> { template } (that content saved as the newest version)
 */
export const registerTemplateVersions: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/templates/:name/versions",
    operationId: "listTemplateVersions",
    tags: ["Templates"],
    summary: "A template's saved versions, newest first",
    params: templateNameParams,
    errorCodes,
    responses: {
      200: { description: "Every saved version (at most the last 100).", body: templateVersionsSchema },
      404: { description: "`not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.templates.listTemplateVersions({ workspaceId: workspaceOf(request), name: params.name }, rpcOptions(request));
      return reply.send({
        versions: res.versions.map((v) => ({
          version: v.version,
          subject: v.subject,
          html: v.html,
          text: v.text || null,
          previewText: v.previewText || null,
          format: (v.format || "liquid") as "liquid" | "mjml",
          source: v.source || null,
          layout: v.layout || null,
          createdAt: iso(v.createdAt),
        })),
      });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/templates/:name/versions/:version/restore",
    operationId: "restoreTemplateVersion",
    tags: ["Templates"],
    summary: "Save an earlier version's content as the template's newest version",
    params: templateVersionParams,
    errorCodes,
    responses: {
      200: { description: "The template, at its new version.", body: templateResponseSchema },
      400: { description: "`invalid_request` or `invalid_template` (the old content no longer passes: a layout or snippet it names is gone).", body: apiErrorSchema },
      404: { description: "`not_found` or `template_version_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const version = versionOfParam(params.version);
      if (version === undefined) throw notFound("template_version_not_found", `Template "${params.name.slice(0, 100)}" has no version ${params.version.slice(0, 20)}`);
      const res = await deps.clients.templates.restoreTemplateVersion(
        { workspaceId: workspaceOf(request), name: params.name, version },
        rpcOptions(request),
      );
      return reply.send({ template: templateJson(res.template!) });
    },
  });
};
