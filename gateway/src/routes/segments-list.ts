import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { pageQuery, SEGMENTS_DEFAULT_LIMIT, segmentJson, segmentListSchema } from "./segments-schema.js";

/** GET /v1/segments?limit&cursor -> { segments: { items, cursor, hasMore } }, oldest first. */
export const registerListSegments: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/segments",
    operationId: "listSegments",
    tags: ["Segments"],
    summary: "List segments, oldest first, cursor-paginated",
    scope: "api_read",
    query: pageQuery,
    responses: {
      200: { description: "One page.", body: segmentListSchema },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.audiences.listSegments(
        { workspaceId: workspaceOf(request), page: { limit: query.limit ?? SEGMENTS_DEFAULT_LIMIT, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ segments: { items: res.segments.map(segmentJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });
