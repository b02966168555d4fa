import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  createTemplateSchema, listTemplatesQuerySchema, templateInput, templateJson, templateListSchema, templateResponseSchema, templateSummaryJson,
} from "./templates-schema.js";

const DEFAULT_LIMIT = 20;

/**
 * GET /v1/templates?limit=&cursor= -> { templates: { items, cursor, hasMore } } (items without bodies)
 * POST /v1/templates -> 201 { template }; 409 template_exists when the name is taken.
 */
export const registerTemplates: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/templates",
    operationId: "listTemplates",
    tags: ["Templates"],
    summary: "List templates (without bodies), oldest first, cursor-paginated",
    description: "Unknown query parameters are a 400 `invalid_request`.",
    query: listTemplatesQuerySchema,
    responses: {
      200: { description: "One page.", body: templateListSchema },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.templates.listTemplates(
        { workspaceId: workspaceOf(request), page: { limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" }, kind: query.kind ?? "" },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ templates: { items: res.templates.map(templateSummaryJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/templates",
    operationId: "createTemplate",
    tags: ["Templates"],
    summary: "Create a template",
    body: createTemplateSchema,
    responses: {
      201: { description: "Created; `variables` lists the merge variables found.", body: templateResponseSchema },
      400: { description: "`invalid_request`, `invalid_json`, `invalid_template_name`, `invalid_template`, `invalid_from` (an unverified `fromEmail`).", body: apiErrorSchema },
      409: { description: "`template_exists`: the name is taken in this workspace.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      413: { description: "`payload_too_large` (body over 2 MB) or `template_html_too_large` (html or text over 500 KB).", body: apiErrorSchema },
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.templates.createTemplate(
        { workspaceId: workspaceOf(request), template: templateInput(body.name, body) },
        rpcOptions(request),
      );
      return reply.code(201).send({ template: templateJson(res.template!) });
    },
  });
};
