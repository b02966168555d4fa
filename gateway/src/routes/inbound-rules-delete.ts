import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, checkRuleId, ruleIdParams } from "@mailroom/http/inbound-schema.js";

/** DELETE /v1/inbound/domains/:id/rules/:ruleId -> { id, isDeleted: true } */
export const registerDeleteInboundRule: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/inbound/domains/:id/rules/:ruleId",
    operationId: "deleteInboundRule",
    tags: ["Receiving"],
    summary: "Delete a rule",
    description: "Addresses only this rule matched are refused from now on.",
    params: ruleIdParams,
    responses: {
      200: { description: "Deleted.", body: z.strictObject({ id: z.string(), isDeleted: z.literal(true) }).meta({ id: "InboundRuleDeleted" }) },
      404: { description: "`inbound_domain_not_found` or `inbound_rule_not_found` (also another workspace's, or a rule of another domain).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkDomainId(params.id);
      checkRuleId(params.ruleId);
      await deps.clients.receiving.deleteInboundRule({ workspaceId: workspaceOf(request), domainId: params.id, id: params.ruleId }, rpcOptions(request));
      return reply.send({ id: params.ruleId, isDeleted: true });
    },
  });
