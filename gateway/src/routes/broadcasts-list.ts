import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  broadcastErrorSchema,
  broadcastJson,
  broadcastListSchema,
  GATING_RESPONSES,
  listBroadcastsQuerySchema,
  statusOf,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

const DEFAULT_LIMIT = 20;

/** GET /v1/broadcasts?status=&limit=&cursor= -> { broadcasts: { items, cursor, hasMore } }, newest first. */
export const registerListBroadcasts: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/broadcasts",
    operationId: "listBroadcasts",
    tags: ["Broadcasts"],
    summary: "List broadcasts, newest first, cursor-paginated",
    query: listBroadcastsQuerySchema,
    responses: {
      200: { description: "One page.", body: broadcastListSchema },
      400: { description: "`invalid_payload`: a status other than DRAFT, SCHEDULED, IN_PROGRESS, COMPLETED, a limit outside 1–100 or a cursor this API did not return.", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.broadcast.listBroadcasts(
        {
          workspaceId: workspaceOf(request),
          status: query.status ? statusOf(query.status) : undefined,
          page: { limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" },
        },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({
        broadcasts: { items: res.broadcasts.map(broadcastJson), cursor: hasMore && res.page?.nextCursor ? res.page.nextCursor : null, hasMore },
      });
    },
  });
