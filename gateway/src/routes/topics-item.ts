import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { defaultSubscriptionOf, topicDeletedSchema, topicIdParams, topicJson, topicResponseSchema, updateTopicSchema } from "@mailroom/http/topics-schema.js";

/**
 * GET /v1/topics/:id -> { topic }
 * PATCH /v1/topics/:id -> { topic } (only the given fields change)
 * DELETE /v1/topics/:id -> { topic, isDeleted: true } (every contact's choice for it goes too)
 * Another workspace's topic is a 404 `topic_not_found` like a missing one.
 */
export const registerTopicItem: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/topics/:id",
    operationId: "getTopic",
    tags: ["Topics"],
    summary: "Read a topic",
    scope: "api_read",
    params: topicIdParams,
    responses: {
      200: { description: "The topic.", body: topicResponseSchema },
      404: { description: "`topic_not_found` (also for another workspace's topic).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.topics.getTopic({ workspaceId: workspaceOf(request), topicId: params.id }, rpcOptions(request));
      return reply.send({ topic: topicJson(res.topic!) });
    },
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/v1/topics/:id",
    operationId: "updateTopic",
    tags: ["Topics"],
    summary: "Change a topic's name, description or default",
    description: "Changing `defaultSubscription` changes what every contact without a choice of its own receives.",
    params: topicIdParams,
    body: updateTopicSchema,
    responses: {
      200: { description: "The topic.", body: topicResponseSchema },
      400: { description: "`invalid_request`, `invalid_json` or `invalid_topic`.", body: apiErrorSchema },
      404: { description: "`topic_not_found`.", body: apiErrorSchema },
      409: { description: "`topic_name_taken`: another topic of the workspace has that name.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.topics.updateTopic(
        {
          workspaceId: workspaceOf(request),
          topicId: params.id,
          name: body.name,
          description: body.description === null ? "" : body.description,
          defaultSubscription: body.defaultSubscription && defaultSubscriptionOf(body.defaultSubscription),
        },
        rpcOptions(request),
      );
      return reply.send({ topic: topicJson(res.topic!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/topics/:id",
    operationId: "deleteTopic",
    tags: ["Topics"],
    summary: "Delete a topic",
    description: "Every contact's choice for the topic is removed with it.",
    params: topicIdParams,
    responses: {
      200: { description: "Deleted: the topic as it was.", body: topicDeletedSchema },
      404: { description: "`topic_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.topics.deleteTopic({ workspaceId: workspaceOf(request), topicId: params.id }, rpcOptions(request));
      return reply.send({ topic: topicJson(res.topic!), isDeleted: true });
    },
  });
};
