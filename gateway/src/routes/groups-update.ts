import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { groupEnvelope, groupIdParams, groupJson, groupNotFound, invalidGroup, updateGroupSchema } from "@mailroom/http/groups-schema.js";

/** PATCH /v1/groups/:id { displayName?, traits? } -> { group } (only the given fields change; traits are replaced). */
export const registerUpdateGroup: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "PATCH",
    url: "/v1/groups/:id",
    operationId: "updateGroup",
    tags: ["Groups"],
    summary: "Update a group's displayName and/or traits",
    params: groupIdParams,
    body: updateGroupSchema,
    responses: {
      200: { description: "The group as updated.", body: groupEnvelope },
      400: invalidGroup,
      404: groupNotFound,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.groups.updateGroup(
        {
          workspaceId: workspaceOf(request),
          groupId: params.id,
          displayName: body.displayName === undefined ? undefined : (body.displayName ?? ""),
          traits: (body.traits ?? undefined) as never,
          clearTraits: body.traits === null,
        },
        rpcOptions(request),
      );
      return reply.send({ group: groupJson(res.group!) });
    },
  });
