import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { contactIdParams } from "@mailroom/http/contacts-schema.js";
import { contactTopicsJson, contactTopicsSchema, setContactTopicsSchema } from "@mailroom/http/topics-schema.js";

/**
 * GET /v1/contacts/:id/topics -> { topics: [{ id, name, subscribed }] }
 * PUT /v1/contacts/:id/topics { topics: [{ id, subscribed }] } -> the same, after recording the choices
 * (DESIGN §9.4). Another workspace's contact is a 404 `contact_not_found`.
 */
export const registerContactTopics: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/:id/topics",
    operationId: "getContactTopics",
    tags: ["Topics"],
    summary: "A contact's topics",
    description: "Every topic of the workspace with the contact's state: its own choice, else the topic's default.",
    scope: "api_read",
    params: contactIdParams,
    responses: {
      200: { description: "The contact's topics.", body: contactTopicsSchema },
      404: { description: "`contact_not_found` (also for another workspace's contact).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.topics.getContactTopics(
        { workspaceId: workspaceOf(request), contact: { ref: { case: "contactId", value: params.id } } },
        rpcOptions(request),
      );
      return reply.send(contactTopicsJson(res.topics));
    },
  });

  defineRoute(app, {
    method: "PUT",
    url: "/v1/contacts/:id/topics",
    operationId: "setContactTopics",
    tags: ["Topics"],
    summary: "Set a contact's topic choices",
    description: "Records the contact's choice for each topic named (topics not named keep theirs) and answers every topic with its state.",
    params: contactIdParams,
    body: setContactTopicsSchema,
    responses: {
      200: { description: "The contact's topics.", body: contactTopicsSchema },
      400: { description: "`invalid_request` (a topic given twice), `invalid_json` or `unknown_topic` (`unknownTopics` lists them; nothing changed).", body: apiErrorSchema },
      404: { description: "`contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.topics.setContactTopics(
        {
          workspaceId: workspaceOf(request),
          contact: { ref: { case: "contactId", value: params.id } },
          choices: body.topics.map((t) => ({ topicId: t.id, subscribed: t.subscribed })),
        },
        rpcOptions(request),
      );
      return reply.send(contactTopicsJson(res.topics));
    },
  });
};
