import { rpcOptions } from "../deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  broadcastEnvelope,
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  GATING_RESPONSES,
  UNAUTHORIZED_RESPONSE,
} from "./broadcasts-schema.js";

/** POST /v1/broadcasts/:id/cancel ({} or no body) -> { broadcast }: SCHEDULED (not started) -> DRAFT. */
export const registerCancelBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/cancel",
    operationId: "cancelBroadcast",
    tags: ["Broadcasts"],
    summary: "Cancel a scheduled broadcast before sending starts",
    description: "Send `{}` or no body (any JSON body is ignored). The broadcast returns to `DRAFT` with its HTML as created.",
    params: broadcastIdParams,
    responses: {
      200: { description: "The broadcast, a DRAFT again.", body: broadcastEnvelope },
      400: { description: "`invalid_json`: a malformed JSON body (an empty body is accepted).", body: broadcastErrorSchema },
      404: { description: "`broadcast_not_found`.", body: broadcastErrorSchema },
      409: { description: "`broadcast_not_cancellable`: a DRAFT, or sending has started.", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id } }) => {
      const res = await deps.clients.broadcast.cancelBroadcast({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.send({ broadcast: broadcastJson(res.broadcast!) });
    },
  });
