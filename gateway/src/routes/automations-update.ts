import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  automationEnvelope, automationIdParams, automationJson, automationNotFound, automationState, invalidAutomation, updateAutomationSchema,
} from "@mailroom/http/automations-schema.js";

/** PATCH /v1/automations/:id { name?, trigger?, steps?, reentry? } -> { automation }: a new version; runs in progress stay on theirs. */
export const registerUpdateAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "PATCH",
    url: "/v1/automations/:id",
    operationId: "updateAutomation",
    tags: ["Automations"],
    summary: "Change an automation: a new version",
    description: "Replaces what is given (the rest stays) and makes the next version, validated like a new automation. Runs in progress finish on the version they started on; new runs take this one. Of two updates of the same version the second is a 409 `automation_state`: read it again and retry.",
    params: automationIdParams,
    body: updateAutomationSchema,
    responses: {
      200: { description: "The automation at its new version.", body: automationEnvelope },
      400: invalidAutomation,
      404: automationNotFound,
      409: automationState,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.automation.updateAutomation(
        {
          workspaceId: workspaceOf(request),
          automationId: params.id,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.trigger !== undefined ? { triggerJson: JSON.stringify(body.trigger) } : {}),
          ...(body.steps !== undefined ? { stepsJson: JSON.stringify(body.steps) } : {}),
          ...(body.reentry !== undefined ? { reentryJson: JSON.stringify(body.reentry) } : {}),
        },
        rpcOptions(request),
      );
      return reply.send({ automation: automationJson(res.automation!) });
    },
  });
