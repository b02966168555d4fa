import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationEnvelope, automationIdParams, automationJson, automationNotFound, automationState } from "@mailroom/http/automations-schema.js";

/** POST /v1/automations/:id/pause -> { automation }: ACTIVE → PAUSED; runs hold where they are. */
export const registerPauseAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/automations/:id/pause",
    operationId: "pauseAutomation",
    tags: ["Automations"],
    summary: "Pause an automation (ACTIVE → PAUSED)",
    description: "Nobody enters; runs hold where they are and resume at the next activation. The body, if any, is ignored.",
    params: automationIdParams,
    responses: {
      200: { description: "The automation, PAUSED.", body: automationEnvelope },
      404: automationNotFound,
      409: automationState,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.automation.pauseAutomation({ workspaceId: workspaceOf(request), automationId: params.id }, rpcOptions(request));
      return reply.send({ automation: automationJson(res.automation!) });
    },
  });
