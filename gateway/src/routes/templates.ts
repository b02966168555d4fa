import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { invalid } from "./contacts-schema.js";
import { createTemplateSchema, listTemplatesQuerySchema, templateJson, templateSummaryJson } from "./templates-schema.js";

const DEFAULT_LIMIT = 20;

/**
 * GET /v1/templates?limit=&cursor= -> { templates: { items, cursor, hasMore } } (items without bodies)
 * POST /v1/templates -> 201 { template }; 409 template_exists when the name is taken.
 */
export function registerTemplates(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/v1/templates", async (request, reply) => {
    const query = listTemplatesQuerySchema.safeParse(request.query ?? {});
    if (!query.success) return sendError(reply, publicErrorBody(invalid(query.error)));
    try {
      const res = await deps.clients.directory.listTemplates(
        { workspaceId: workspaceOf(request), page: { limit: query.data.limit ?? DEFAULT_LIMIT, cursor: query.data.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ templates: { items: res.templates.map(templateSummaryJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.post("/v1/templates", async (request, reply) => {
    const body = createTemplateSchema.safeParse(request.body);
    if (!body.success) return sendError(reply, publicErrorBody(invalid(body.error)));
    try {
      const { name, subject, html, text, previewText } = body.data;
      const res = await deps.clients.directory.createTemplate(
        { workspaceId: workspaceOf(request), template: { name, subject, html, text: text ?? "", previewText: previewText ?? "" } },
        rpcOptions(request),
      );
      return reply.code(201).send({ template: templateJson(res.template!) });
    } catch (err) {
      return replyWithError(reply, err);
    }
  });
}
