import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { replaceTemplateSchema, templateDeletedSchema, templateInput, templateJson, templateNameParams, templateResponseSchema } from "./templates-schema.js";

/**
 * On sends an unknown template is a 400 (the gateway's error table); on the template
 * resource itself a missing one is a plain 404.
 */
const errorCodes = { template_not_found: "not_found" };

/**
 * GET /v1/templates/:name -> { template }
 * PUT /v1/templates/:name -> { template } (replaces subject, html, text, previewText)
 * DELETE /v1/templates/:name -> { deleted: true, name }
 */
export const registerTemplateItem: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/templates/:name",
    operationId: "getTemplate",
    tags: ["Templates"],
    summary: "Read a template",
    params: templateNameParams,
    errorCodes,
    responses: {
      200: { description: "The template.", body: templateResponseSchema },
      404: { description: "`not_found` (also for another workspace's template).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.templates.getTemplate({ workspaceId: workspaceOf(request), name: params.name }, rpcOptions(request));
      return reply.send({ template: templateJson(res.template!) });
    },
  });

  defineRoute(app, {
    method: "PUT",
    url: "/v1/templates/:name",
    operationId: "replaceTemplate",
    tags: ["Templates"],
    summary: "Replace a template's subject, html, text and preview text",
    params: templateNameParams,
    body: replaceTemplateSchema,
    errorCodes,
    responses: {
      200: { description: "The template.", body: templateResponseSchema },
      400: {
        description: "`invalid_request` (e.g. a body `name` other than the path's), `invalid_json`, `invalid_template_name`, `invalid_template`.",
        body: apiErrorSchema,
      },
      404: { description: "`not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      413: { description: "`payload_too_large` or `template_html_too_large`.", body: apiErrorSchema },
    },
    handler: async (request, reply, { params, body }) => {
      if (body.name !== undefined && body.name !== params.name) {
        throw refusal({ code: "invalid_request", message: "name in the body must match the template in the path (templates cannot be renamed)" });
      }
      const res = await deps.clients.templates.updateTemplate(
        { workspaceId: workspaceOf(request), template: templateInput(params.name, body) },
        rpcOptions(request),
      );
      return reply.send({ template: templateJson(res.template!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/templates/:name",
    operationId: "deleteTemplate",
    tags: ["Templates"],
    summary: "Delete a template",
    params: templateNameParams,
    errorCodes,
    responses: {
      200: { description: "Deleted, with its saved versions.", body: templateDeletedSchema },
      404: { description: "`not_found`.", body: apiErrorSchema },
      409: { description: "`template_in_use`: a layout or snippet other templates still use (`usedBy` names them).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      await deps.clients.templates.deleteTemplate({ workspaceId: workspaceOf(request), name: params.name }, rpcOptions(request));
      return reply.send({ deleted: true, name: params.name });
    },
  });
};
