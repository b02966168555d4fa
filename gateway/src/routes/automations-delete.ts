import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { automationIdParams, automationJson, automationNotFound, automationSchema } from "@mailroom/http/automations-schema.js";

const deletedSchema = z.strictObject({ automation: automationSchema, deleted: z.literal(true) }).meta({ id: "AutomationDeleted" });

/** DELETE /v1/automations/:id -> { automation, deleted: true }: its active runs exit (`automation_deleted`). */
export const registerDeleteAutomation: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/automations/:id",
    operationId: "deleteAutomation",
    tags: ["Automations"],
    summary: "Delete an automation",
    description: "Nobody enters any more and every active run exits with `exitReason` `automation_deleted` (`AUTOMATION_RUN_EXITED` webhooks). The automation is then a 404.",
    params: automationIdParams,
    responses: { 200: { description: "The automation as it was.", body: deletedSchema }, 404: automationNotFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.automation.deleteAutomation({ workspaceId: workspaceOf(request), automationId: params.id }, rpcOptions(request));
      return reply.send({ automation: automationJson(res.automation!), deleted: true });
    },
  });
