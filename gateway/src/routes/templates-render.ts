import type { JsonObject } from "@bufbuild/protobuf";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { renderedTemplateSchema, renderTemplateSchema, templateNameParams } from "./templates-schema.js";

const errorCodes = { template_not_found: "not_found" };

/** POST /v1/templates/:name/render { variables?, contactId? } -> { subject, html, text, previewText } (DESIGN §10.2) */
export const registerTemplateRender: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/templates/:name/render",
    operationId: "renderTemplate",
    tags: ["Templates"],
    summary: "Render a template with values or a contact's properties (a preview: nothing is sent or tracked)",
    params: templateNameParams,
    body: renderTemplateSchema,
    errorCodes,
    responses: {
      200: { description: "The rendered subject, HTML, text and preview text.", body: renderedTemplateSchema },
      400: {
        description: "`invalid_request`, `invalid_json`, or `template_render_failed` (over 50 ms or 1,000 loop iterations, a snippet gone, a filter that failed).",
        body: apiErrorSchema,
      },
      404: { description: "`not_found` (no such template) or `contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.templates.renderTemplate(
        { workspaceId: workspaceOf(request), name: params.name, variables: (body.variables ?? {}) as JsonObject, contactId: body.contactId ?? "" },
        rpcOptions(request),
      );
      return reply.send({ subject: res.subject, html: res.html, text: res.text, previewText: res.previewText });
    },
  });
};
