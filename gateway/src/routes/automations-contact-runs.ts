import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { contactIdParams } from "@mailroom/http/contacts-schema.js";
import { defineRoute, type RouteModule } from "./route.js";
import { AUTOMATIONS_DEFAULT_LIMIT, pageQuery, runListSchema, runPage } from "@mailroom/http/automations-schema.js";

/** GET /v1/contacts/:id/automation-runs?limit&cursor -> { runs: { items, cursor, hasMore } }: one contact's runs in every automation. */
export const registerContactAutomationRuns: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id/automation-runs",
    operationId: "listContactAutomationRuns",
    tags: ["Contacts", "Automations"],
    summary: "A contact's runs in every automation, newest first",
    scope: "api_read",
    params: contactIdParams,
    query: pageQuery,
    responses: {
      200: { description: "One page.", body: runListSchema },
      400: { description: "`invalid_request` (a bad limit or cursor).", body: apiErrorSchema },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const workspaceId = workspaceOf(request);
      // An unknown contact is a 404, not an empty list (as its events are).
      await deps.clients.contacts.getContact({ workspaceId, contactId: params.id }, rpcOptions(request));
      const res = await deps.clients.automation.listRuns(
        { workspaceId, contactId: params.id, page: { limit: query.limit ?? AUTOMATIONS_DEFAULT_LIMIT, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      return reply.send(runPage(res));
    },
  });
