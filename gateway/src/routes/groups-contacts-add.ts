import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";
import { groupIdParams } from "@mailroom/http/groups-schema.js";

const membershipSchema = z
  .strictObject({
    groupId: z.string().meta({ description: "The group's id (`grp_…`), also when its publicId was given." }),
    contactId: z.string(),
    addedAt: z.iso.datetime().meta({ description: "When the contact joined (the first time: adding a member again keeps it)." }),
  })
  .meta({ id: "GroupMembership" });

/** POST /v1/groups/:id/contacts { contactId } -> { groupId, contactId, addedAt }: 201 when it joined now, 200 when it was a member. */
export const registerAddGroupContact: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/groups/:id/contacts",
    operationId: "addGroupContact",
    tags: ["Groups"],
    summary: "Add a contact to a group",
    description: "A contact that joins sends `CONTACT_TAG_ADDED` to the workspace's webhooks (the group as the tag); adding a member again changes nothing and sends nothing.",
    params: groupIdParams,
    body: z.strictObject({ contactId: z.string().min(1).max(100) }).meta({ id: "AddGroupContactRequest" }),
    responses: {
      200: { description: "It was a member already (its first `addedAt`).", body: membershipSchema },
      201: { description: "Added.", body: membershipSchema },
      400: { description: "`invalid_request` or `invalid_json`.", body: apiErrorSchema },
      404: { description: "`group_not_found` or `contact_not_found` (also another workspace's).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.groups.addGroupContact({ workspaceId: workspaceOf(request), groupId: params.id, contactId: body.contactId }, rpcOptions(request));
      return reply.code(res.added ? 201 : 200).send({ groupId: res.groupId, contactId: res.contactId, addedAt: iso(res.addedAt)! });
    },
  });
