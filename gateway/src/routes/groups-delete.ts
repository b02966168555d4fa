import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { groupIdParams, groupJson, groupNotFound, groupSchema } from "@mailroom/http/groups-schema.js";

/** DELETE /v1/groups/:id -> { group, isDeleted: true }; every member leaves it (no CONTACT_TAG_REMOVED is sent). */
export const registerDeleteGroup: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/groups/:id",
    operationId: "deleteGroup",
    tags: ["Groups"],
    summary: "Delete a group",
    description: "The group is removed from every contact in it. Contacts are not deleted, and no `CONTACT_TAG_REMOVED` webhook is sent for them (the group is gone, not left).",
    params: groupIdParams,
    responses: {
      200: { description: "The group as it was.", body: z.strictObject({ group: groupSchema, isDeleted: z.literal(true) }).meta({ id: "GroupDeleted" }) },
      404: groupNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.groups.deleteGroup({ workspaceId: workspaceOf(request), groupId: params.id }, rpcOptions(request));
      return reply.send({ group: groupJson(res.group!), isDeleted: true });
    },
  });
