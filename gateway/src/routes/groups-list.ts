import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { groupJson, groupSchema, pageQuery } from "@mailroom/http/groups-schema.js";

/** GET /v1/groups?limit&cursor -> { items, cursor, hasMore } (the client's list has no envelope), in creation order. */
export const registerListGroups: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/groups",
    operationId: "listGroups",
    tags: ["Groups"],
    summary: "List groups (oldest first)",
    scope: "api_read",
    query: pageQuery,
    responses: {
      200: {
        description: "One page; no envelope (as the official client reads it).",
        body: z.strictObject({ items: z.array(groupSchema), cursor: z.string().nullable(), hasMore: z.boolean() }).meta({ id: "GroupList" }),
      },
      400: { description: "`invalid_request` (limit) or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.groups.listGroups({ workspaceId: workspaceOf(request), page: { limit: query.limit ?? 0, cursor: query.cursor ?? "" } }, rpcOptions(request));
      return reply.send({ items: res.groups.map(groupJson), cursor: res.page?.hasMore ? res.page.nextCursor : null, hasMore: Boolean(res.page?.hasMore) });
    },
  });
