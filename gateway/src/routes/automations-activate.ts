import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationEnvelope, automationIdParams, automationJson, automationNotFound, automationState } from "@mailroom/http/automations-schema.js";

/** POST /v1/automations/:id/activate -> { automation }: DRAFT or PAUSED → ACTIVE. */
export const registerActivateAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/automations/:id/activate",
    operationId: "activateAutomation",
    tags: ["Automations"],
    summary: "Activate an automation (DRAFT or PAUSED → ACTIVE)",
    description: "Contacts that meet the trigger from now on enter. After a pause, held runs go on (a wait that ended meanwhile continues at once). What the definition names is checked again first (a template deleted since is a 400). The body, if any, is ignored.",
    params: automationIdParams,
    responses: {
      200: { description: "The automation, ACTIVE.", body: automationEnvelope },
      400: { description: "`invalid_automation`: something the definition names no longer exists (the message names its path).", body: apiErrorSchema },
      404: automationNotFound,
      409: automationState,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.automation.activateAutomation({ workspaceId: workspaceOf(request), automationId: params.id }, rpcOptions(request));
      return reply.send({ automation: automationJson(res.automation!) });
    },
  });
