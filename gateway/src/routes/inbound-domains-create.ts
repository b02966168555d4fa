import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { createInboundDomainSchema, inboundDomainEnvelope, inboundDomainJson } from "@mailroom/http/inbound-schema.js";

/** POST /v1/inbound/domains { domain } -> 201 { domain }: pending until its MX record names the inbound host. */
export const registerCreateInboundDomain: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/inbound/domains",
    operationId: "createInboundDomain",
    tags: ["Receiving"],
    summary: "Receive mail for a domain",
    description: "Adds the domain as `pending` with the MX record to publish (`mx`). The domain, or a parent of it, must be a verified sending domain of the workspace. Once the record is published, `POST /v1/inbound/domains/{id}/verify` looks it up; mail is taken only for a verified domain, and only for addresses a rule matches.",
    body: createInboundDomainSchema,
    responses: {
      201: { description: "Added; publish `mx`, then verify.", body: inboundDomainEnvelope },
      400: { description: "`invalid_request` or `invalid_json`: not a domain name (the message says which field); `invalid_inbound_domain`: a name the server keeps for itself.", body: apiErrorSchema },
      409: { description: "`domain_not_verified`: neither the domain nor a parent of it is a verified sending domain of this workspace (its DKIM record proves the domain is yours; an MX record only that its mail comes here); `inbound_domain_exists`: already an inbound domain of this workspace; `inbound_domain_taken`: of another workspace.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.receiving.createInboundDomain({ workspaceId: workspaceOf(request), domain: body.domain }, rpcOptions(request));
      return reply.code(201).send({ domain: inboundDomainJson(res.domain!) });
    },
  });
