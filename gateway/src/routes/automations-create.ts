import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationEnvelope, automationJson, createAutomationSchema, invalidAutomation } from "@mailroom/http/automations-schema.js";

/** POST /v1/automations { name, trigger, steps, reentry? } -> 201 { automation }: a DRAFT at version 1. */
export const registerCreateAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/automations",
    operationId: "createAutomation",
    tags: ["Automations"],
    summary: "Create an automation (a DRAFT, version 1)",
    description: "The definition is validated whole: its shape, then every template, group, property and filter it names. Activate it to let contacts in.",
    body: createAutomationSchema,
    responses: {
      201: { description: "Created.", body: automationEnvelope },
      400: invalidAutomation,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.automation.createAutomation(
        {
          workspaceId: workspaceOf(request),
          name: body.name,
          triggerJson: JSON.stringify(body.trigger),
          stepsJson: JSON.stringify(body.steps),
          reentryJson: body.reentry === undefined ? "" : JSON.stringify(body.reentry),
        },
        rpcOptions(request),
      );
      return reply.code(201).send({ automation: automationJson(res.automation!) });
    },
  });
