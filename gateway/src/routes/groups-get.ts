import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { groupEnvelope, groupIdParams, groupJson, groupNotFound } from "@mailroom/http/groups-schema.js";

/** GET /v1/groups/:id (id or publicId) -> { group } */
export const registerGetGroup: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/groups/:id",
    operationId: "getGroup",
    tags: ["Groups"],
    summary: "Read a group (by id or publicId)",
    scope: "api_read",
    params: groupIdParams,
    responses: {
      200: { description: "The group.", body: groupEnvelope },
      404: groupNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.groups.getGroup({ workspaceId: workspaceOf(request), groupId: params.id }, rpcOptions(request));
      return reply.send({ group: groupJson(res.group!) });
    },
  });
