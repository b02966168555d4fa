import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { createTopicSchema, defaultSubscriptionOf, listTopicsQuerySchema, topicJson, topicListSchema, topicResponseSchema } from "@mailroom/http/topics-schema.js";

const DEFAULT_LIMIT = 20;

/**
 * GET /v1/topics?limit=&cursor= -> { topics: { items, cursor, hasMore } } (oldest first)
 * POST /v1/topics -> 201 { topic }; 409 topic_name_taken when the name is taken (DESIGN §9.4).
 */
export const registerTopics: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/topics",
    operationId: "listTopics",
    tags: ["Topics"],
    summary: "List topics, oldest first, cursor-paginated",
    description: "Unknown query parameters are a 400 `invalid_request`.",
    scope: "api_read",
    query: listTopicsQuerySchema,
    responses: {
      200: { description: "One page.", body: topicListSchema },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.topics.listTopics(
        { workspaceId: workspaceOf(request), limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" },
        rpcOptions(request),
      );
      return reply.send({ topics: { items: res.topics.map(topicJson), cursor: res.hasMore ? res.nextCursor : null, hasMore: res.hasMore } });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/topics",
    operationId: "createTopic",
    tags: ["Topics"],
    summary: "Create a topic",
    description: "A topic is what broadcasts sent to it are about; contacts choose theirs on the preference page (`{{manageUrl}}`) or through `PUT /v1/contacts/{id}/topics`.",
    body: createTopicSchema,
    responses: {
      201: { description: "Created.", body: topicResponseSchema },
      400: { description: "`invalid_request`, `invalid_json` or `invalid_topic` (the message names the field).", body: apiErrorSchema },
      409: { description: "`topic_name_taken`: the workspace has a topic of that name.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.topics.createTopic(
        { workspaceId: workspaceOf(request), name: body.name, description: body.description ?? "", defaultSubscription: defaultSubscriptionOf(body.defaultSubscription) },
        rpcOptions(request),
      );
      return reply.code(201).send({ topic: topicJson(res.topic!) });
    },
  });
};
