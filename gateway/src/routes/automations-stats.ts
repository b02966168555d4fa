import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationIdParams, automationNotFound, statsSchema, stepStatsJson } from "@mailroom/http/automations-schema.js";

/** GET /v1/automations/:id/stats?version -> { stats: { automationId, version, steps } }. */
export const registerAutomationStats: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/automations/:id/stats",
    operationId: "getAutomationStats",
    tags: ["Automations"],
    summary: "Per-step counts of one version: entered, waiting, completed, exited",
    scope: "api_read",
    params: automationIdParams,
    query: z.strictObject({
      version: z.coerce.number().int().min(1).max(2_147_483_647).optional().meta({ description: "Default: the current version." }),
    }),
    responses: {
      200: { description: "Every step of the version, depth first.", body: statsSchema },
      400: { description: "`invalid_request`: `version` is not a positive integer.", body: apiErrorSchema },
      404: { description: "`automation_not_found`: no such automation, or it never had this version.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const res = await deps.clients.automation.getAutomationStats(
        { workspaceId: workspaceOf(request), automationId: params.id, version: query.version ?? 0 },
        rpcOptions(request),
      );
      return reply.send({ stats: { automationId: res.automationId, version: res.version, steps: res.steps.map(stepStatsJson) } });
    },
  });
