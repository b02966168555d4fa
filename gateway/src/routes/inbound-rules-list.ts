import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, domainIdParams, domainNotFound, inboundRuleJson, inboundRuleSchema } from "@mailroom/http/inbound-schema.js";

/** GET /v1/inbound/domains/:id/rules -> { rules } */
export const registerListInboundRules: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/inbound/domains/:id/rules",
    operationId: "listInboundRules",
    tags: ["Receiving"],
    summary: "List an inbound domain's rules",
    scope: "api_read",
    params: domainIdParams,
    responses: {
      200: { description: "The domain's rules.", body: z.strictObject({ rules: z.array(inboundRuleSchema) }).meta({ id: "InboundRuleList" }) },
      404: domainNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkDomainId(params.id);
      const res = await deps.clients.receiving.listInboundRules({ workspaceId: workspaceOf(request), domainId: params.id }, rpcOptions(request));
      return reply.send({ rules: res.rules.map(inboundRuleJson) });
    },
  });
