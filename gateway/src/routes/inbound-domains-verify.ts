import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, domainIdParams, domainNotFound, inboundDomainEnvelope, inboundDomainJson } from "@mailroom/http/inbound-schema.js";

/** POST /v1/inbound/domains/:id/verify -> { domain }: its MX records looked up again (real DNS). */
export const registerVerifyInboundDomain: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/inbound/domains/:id/verify",
    operationId: "verifyInboundDomain",
    tags: ["Receiving"],
    summary: "Look the domain's MX record up again",
    description: "Answers the domain as the lookup left it: `verified` when an MX record names the inbound host, else still `pending` with `failure` saying what was found. The body is ignored.",
    params: domainIdParams,
    responses: {
      200: { description: "The domain after the lookup (verified or not).", body: inboundDomainEnvelope },
      404: domainNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkDomainId(params.id);
      // A DNS lookup may take a resolver's full timeout.
      const res = await deps.clients.receiving.verifyInboundDomain({ workspaceId: workspaceOf(request), id: params.id }, { ...rpcOptions(request), timeoutMs: 20_000 });
      return reply.send({ domain: inboundDomainJson(res.domain!) });
    },
  });
