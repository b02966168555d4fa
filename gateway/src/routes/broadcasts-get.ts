import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  broadcastEnvelope,
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  GATING_RESPONSES,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

/** GET /v1/broadcasts/:id -> { broadcast } with every field, the progress counters and the audience counted now (audienceCount). */
export const registerGetBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/broadcasts/:id",
    operationId: "getBroadcast",
    tags: ["Broadcasts"],
    summary: "Read a broadcast, its status and progress",
    params: broadcastIdParams,
    responses: {
      200: { description: "The broadcast.", body: broadcastEnvelope },
      404: { description: "`broadcast_not_found` (also for another workspace's broadcast).", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id } }) => {
      const res = await deps.clients.broadcast.getBroadcast({ workspaceId: workspaceOf(request), id, countAudience: true }, rpcOptions(request));
      return reply.send({ broadcast: broadcastJson(res.broadcast!) });
    },
  });
