import type { FastifyInstance, FastifyReply } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { publicErrorBody, replyWithError, sendError } from "../errors.js";
import { errorInfoOf } from "../../../services/kit/src/errors.js";
import { invalid } from "./contacts-schema.js";
import { replaceTemplateSchema, templateJson } from "./templates-schema.js";

type NameParams = { Params: { name: string } };

/**
 * On sends an unknown template is a 400 (the gateway's error table); on the template
 * resource itself a missing one is a plain 404.
 */
function replyWithTemplateError(reply: FastifyReply, err: unknown): FastifyReply {
  const info = errorInfoOf(err);
  if (info?.code === "template_not_found") return sendError(reply, publicErrorBody({ code: "not_found", message: info.message }));
  return replyWithError(reply, err);
}

/**
 * GET /v1/templates/:name -> { template }
 * PUT /v1/templates/:name -> { template } (replaces subject, html, text, previewText)
 * DELETE /v1/templates/:name -> { deleted: true, name }
 */
export function registerTemplateItem(app: FastifyInstance, deps: GatewayDeps): void {
  app.get<NameParams>("/v1/templates/:name", async (request, reply) => {
    try {
      const res = await deps.clients.directory.getTemplate({ workspaceId: workspaceOf(request), name: request.params.name }, rpcOptions(request));
      return reply.send({ template: templateJson(res.template!) });
    } catch (err) {
      return replyWithTemplateError(reply, err);
    }
  });

  app.put<NameParams>("/v1/templates/:name", async (request, reply) => {
    const body = replaceTemplateSchema.safeParse(request.body);
    if (!body.success) return sendError(reply, publicErrorBody(invalid(body.error)));
    const { name, subject, html, text, previewText } = body.data;
    if (name !== undefined && name !== request.params.name) {
      return sendError(reply, publicErrorBody({ code: "invalid_request", message: "name in the body must match the template in the path (templates cannot be renamed)" }));
    }
    try {
      const res = await deps.clients.directory.updateTemplate(
        { workspaceId: workspaceOf(request), template: { name: request.params.name, subject, html, text: text ?? "", previewText: previewText ?? "" } },
        rpcOptions(request),
      );
      return reply.send({ template: templateJson(res.template!) });
    } catch (err) {
      return replyWithTemplateError(reply, err);
    }
  });

  app.delete<NameParams>("/v1/templates/:name", async (request, reply) => {
    try {
      await deps.clients.directory.deleteTemplate({ workspaceId: workspaceOf(request), name: request.params.name }, rpcOptions(request));
      return reply.send({ deleted: true, name: request.params.name });
    } catch (err) {
      return replyWithTemplateError(reply, err);
    }
  });
}
