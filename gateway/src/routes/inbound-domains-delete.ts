import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, domainIdParams, domainNotFound } from "@mailroom/http/inbound-schema.js";

/** DELETE /v1/inbound/domains/:id -> { id, isDeleted: true } */
export const registerDeleteInboundDomain: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/inbound/domains/:id",
    operationId: "deleteInboundDomain",
    tags: ["Receiving"],
    summary: "Stop receiving mail for a domain",
    description: "Deletes the domain and its rules: its mail is refused from now on. Emails already received are kept until their retention ends.",
    params: domainIdParams,
    responses: {
      200: { description: "Deleted.", body: z.strictObject({ id: z.string(), isDeleted: z.literal(true) }).meta({ id: "InboundDomainDeleted" }) },
      404: domainNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      checkDomainId(params.id);
      await deps.clients.receiving.deleteInboundDomain({ workspaceId: workspaceOf(request), id: params.id }, rpcOptions(request));
      return reply.send({ id: params.id, isDeleted: true });
    },
  });
