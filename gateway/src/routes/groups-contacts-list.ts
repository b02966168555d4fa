import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { iso } from "@mailroom/http/contacts-schema.js";
import { groupIdParams, pageQuery } from "@mailroom/http/groups-schema.js";

/** GET /v1/groups/:id/contacts?limit&cursor -> { items: [{ contactId, addedAt }], cursor, hasMore }, in contact-id (creation) order. */
export const registerListGroupContacts: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/groups/:id/contacts",
    operationId: "listGroupContacts",
    tags: ["Groups"],
    summary: "List a group's contacts",
    scope: "api_read",
    params: groupIdParams,
    query: pageQuery,
    responses: {
      200: {
        description: "One page, oldest contact first; no envelope.",
        body: z
          .strictObject({ items: z.array(z.strictObject({ contactId: z.string(), addedAt: z.iso.datetime() })), cursor: z.string().nullable(), hasMore: z.boolean() })
          .meta({ id: "GroupContactList" }),
      },
      400: { description: "`invalid_request` (limit) or `invalid_cursor`.", body: apiErrorSchema },
      404: { description: "`group_not_found` (also another workspace's group).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const res = await deps.clients.groups.listGroupContacts(
        { workspaceId: workspaceOf(request), groupId: params.id, page: { limit: query.limit ?? 0, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      return reply.send({
        items: res.members.map((m) => ({ contactId: m.contactId, addedAt: iso(m.addedAt)! })),
        cursor: res.page?.hasMore ? res.page.nextCursor : null,
        hasMore: Boolean(res.page?.hasMore),
      });
    },
  });
