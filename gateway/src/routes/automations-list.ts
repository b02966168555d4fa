import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { AUTOMATIONS_DEFAULT_LIMIT, automationJson, automationListSchema, pageQuery } from "@mailroom/http/automations-schema.js";

/** GET /v1/automations?limit&cursor -> { automations: { items, cursor, hasMore } }, newest first. */
export const registerListAutomations: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/automations",
    operationId: "listAutomations",
    tags: ["Automations"],
    summary: "List automations, newest first, cursor-paginated",
    scope: "api_read",
    query: pageQuery,
    responses: {
      200: { description: "One page.", body: automationListSchema },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.automation.listAutomations(
        { workspaceId: workspaceOf(request), page: { limit: query.limit ?? AUTOMATIONS_DEFAULT_LIMIT, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ automations: { items: res.automations.map(automationJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });
