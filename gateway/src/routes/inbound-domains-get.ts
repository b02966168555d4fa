import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, domainIdParams, domainNotFound, inboundDomainEnvelope, inboundDomainJson } from "@mailroom/http/inbound-schema.js";

/** GET /v1/inbound/domains/:id -> { domain } */
export const registerGetInboundDomain: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/inbound/domains/:id",
    operationId: "getInboundDomain",
    tags: ["Receiving"],
    summary: "Read an inbound domain, its status and MX record",
    scope: "api_read",
    params: domainIdParams,
    responses: {
      200: { description: "The domain.", body: inboundDomainEnvelope },
      404: domainNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkDomainId(params.id);
      const res = await deps.clients.receiving.getInboundDomain({ workspaceId: workspaceOf(request), id: params.id }, rpcOptions(request));
      return reply.send({ domain: inboundDomainJson(res.domain!) });
    },
  });
