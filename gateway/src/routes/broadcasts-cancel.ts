import { rpcOptions } from "@mailroom/http/deps.js";
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
} from "@mailroom/http/broadcasts-schema.js";

/**
 * POST /v1/broadcasts/:id/cancel ({} or no body) -> { broadcast }: SCHEDULED (not started) ->
 * DRAFT, or an A/B test waiting for its winner stops (the rest is not sent).
 */
export const registerCancelBroadcast: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/cancel",
    operationId: "cancelBroadcast",
    tags: ["Broadcasts"],
    summary: "Cancel a scheduled broadcast before sending starts (or an A/B test during its wait)",
    description:
      "Send `{}` or no body (any JSON body is ignored). The broadcast returns to `DRAFT` with its HTML as created. A broadcast whose A/B test waits for its winner (none chosen yet) stops instead: it stays `IN_PROGRESS` with `abTest.state` `cancelled` and `pauseReason` `ab_test_cancelled`, the rest of the audience is never sent, and it becomes `COMPLETED` once the test share has settled.",
    params: broadcastIdParams,
    responses: {
      200: { description: "The broadcast, a DRAFT again (or its A/B test cancelled during the wait).", body: broadcastEnvelope },
      400: { description: "`invalid_json`: a malformed JSON body (an empty body is accepted).", body: broadcastErrorSchema },
      404: { description: "`broadcast_not_found`.", body: broadcastErrorSchema },
      409: { description: "`broadcast_not_cancellable`: a DRAFT, or sending has started (and it is not an A/B test waiting for its winner).", body: broadcastErrorSchema },
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
};
