import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { AUTOMATIONS_DEFAULT_LIMIT, RUN_STATUSES, automationIdParams, automationNotFound, pageQuery, runListSchema, runPage, runStatusOf } from "@mailroom/http/automations-schema.js";

/** GET /v1/automations/:id/runs?contactId&status&limit&cursor -> { runs: { items, cursor, hasMore } }, newest first. */
export const registerListAutomationRuns: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/automations/:id/runs",
    operationId: "listAutomationRuns",
    tags: ["Automations"],
    summary: "An automation's runs, newest first, cursor-paginated",
    scope: "api_read",
    params: automationIdParams,
    query: pageQuery.extend({
      contactId: z.string().min(1).max(100).optional().meta({ description: "Only this contact's runs (`ctc_…`)." }),
      status: z.enum(RUN_STATUSES).optional().meta({ description: "Only runs in this status." }),
    }),
    responses: {
      200: { description: "One page.", body: runListSchema },
      400: { description: "`invalid_request` (a status other than ACTIVE, COMPLETED, EXITED; a bad limit or cursor).", body: apiErrorSchema },
      404: automationNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const res = await deps.clients.automation.listRuns(
        {
          workspaceId: workspaceOf(request),
          automationId: params.id,
          contactId: query.contactId ?? "",
          status: runStatusOf(query.status),
          page: { limit: query.limit ?? AUTOMATIONS_DEFAULT_LIMIT, cursor: query.cursor ?? "" },
        },
        rpcOptions(request),
      );
      return reply.send(runPage(res));
    },
  });
