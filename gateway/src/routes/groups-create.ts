import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { createGroupSchema, groupEnvelope, groupJson, invalidGroup } from "@mailroom/http/groups-schema.js";

/** POST /v1/groups { publicId, displayName?, traits? } -> 201 { group } */
export const registerCreateGroup: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/groups",
    operationId: "createGroup",
    tags: ["Groups"],
    summary: "Create a group",
    body: createGroupSchema,
    responses: {
      201: { description: "Created.", body: groupEnvelope },
      400: invalidGroup,
      409: { description: "`group_public_id_taken`: the workspace has a group with this `publicId`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.groups.createGroup(
        { workspaceId: workspaceOf(request), publicId: body.publicId, displayName: body.displayName ?? "", traits: body.traits as never },
        rpcOptions(request),
      );
      return reply.code(201).send({ group: groupJson(res.group!) });
    },
  });
