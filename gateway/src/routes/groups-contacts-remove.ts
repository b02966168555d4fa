import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { groupIdParams } from "@mailroom/http/groups-schema.js";

/** DELETE /v1/groups/:id/contacts/:contactId -> { groupId, contactId, isRemoved } (false when it was not a member). */
export const registerRemoveGroupContact: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/groups/:id/contacts/:contactId",
    operationId: "removeGroupContact",
    tags: ["Groups"],
    summary: "Remove a contact from a group",
    description: "A member that leaves sends `CONTACT_TAG_REMOVED` to the workspace's webhooks.",
    params: z.strictObject({ ...groupIdParams.shape, contactId: z.string().min(1).max(100) }),
    responses: {
      200: {
        description: "`isRemoved` is false when the contact was not a member.",
        body: z.strictObject({ groupId: z.string(), contactId: z.string(), isRemoved: z.boolean() }).meta({ id: "GroupContactRemoved" }),
      },
      404: { description: "`group_not_found` or `contact_not_found` (also another workspace's).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.groups.removeGroupContact({ workspaceId: workspaceOf(request), groupId: params.id, contactId: params.contactId }, rpcOptions(request));
      return reply.send({ groupId: res.groupId, contactId: res.contactId, isRemoved: res.removed });
    },
  });
