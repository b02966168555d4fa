import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationEnvelope, automationIdParams, automationJson, automationNotFound } from "@mailroom/http/automations-schema.js";

/** GET /v1/automations/:id -> { automation }. */
export const registerGetAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/automations/:id",
    operationId: "getAutomation",
    tags: ["Automations"],
    summary: "Read an automation (its current version and run counts)",
    scope: "api_read",
    params: automationIdParams,
    responses: { 200: { description: "The automation.", body: automationEnvelope }, 404: automationNotFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.automation.getAutomation({ workspaceId: workspaceOf(request), automationId: params.id }, rpcOptions(request));
      return reply.send({ automation: automationJson(res.automation!) });
    },
  });
