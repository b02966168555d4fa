import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { inboundDomainJson, inboundDomainSchema } from "@mailroom/http/inbound-schema.js";

/** GET /v1/inbound/domains -> { domains } */
export const registerListInboundDomains: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/inbound/domains",
    operationId: "listInboundDomains",
    tags: ["Receiving"],
    summary: "List the domains the workspace receives mail for",
    scope: "api_read",
    responses: {
      200: { description: "Every inbound domain of the workspace.", body: z.strictObject({ domains: z.array(inboundDomainSchema) }).meta({ id: "InboundDomainList" }) },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply) => {
      const res = await deps.clients.receiving.listInboundDomains({ workspaceId: workspaceOf(request) }, rpcOptions(request));
      return reply.send({ domains: res.domains.map(inboundDomainJson) });
    },
  });
