import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { createWebhookSchema, updateWebhookSchema } from "@mailroom/http/webhooks-schema.js";
import {
  checkWebhookId,
  deliveryEnvelope,
  deliveryJson,
  deliveryListSchema,
  statusValue,
  webhookDeletedSchema,
  webhookEnvelope,
  webhookIdParams,
  webhookJson,
  webhookListItemJson,
  webhookListSchema,
} from "./webhooks-schema.js";

const notFound404 = { description: "`webhook_not_found` (also for another workspace's webhook).", body: apiErrorSchema };
const invalid400 = { description: "`invalid_payload` (a value the service refuses: URL, event names with `allowedValues`, token, status), `invalid_request` (a field of the wrong type), `invalid_json`.", body: apiErrorSchema };

/**
 * The official client's webhook routes (sdk-wire-contract §9.2), answered by the webhooks
 * service: POST/GET /v1/webhooks, GET/POST/DELETE /v1/webhooks/:id.
 */
export const registerWebhooks: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/webhooks",
    operationId: "createWebhook",
    tags: ["Webhooks"],
    summary: "Create a webhook",
    description: "Deliveries are signed: `X-SMASHSEND-SIGNATURE` (hex HMAC-SHA256 of the raw body with the token) and the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`).",
    body: createWebhookSchema,
    responses: { 200: { description: "The webhook, with its token.", body: webhookEnvelope }, 400: invalid400, ...API_KEY_RESPONSES, ...JSON_BODY_RESPONSES },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.webhooks.createWebhook(
        { workspaceId: workspaceOf(request), url: body.url, events: body.events, token: body.token, displayName: body.displayName ?? body.description ?? "" },
        rpcOptions(request),
      );
      return reply.send({ webhook: webhookJson(res.webhook!) });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/webhooks",
    operationId: "listWebhooks",
    tags: ["Webhooks"],
    summary: "List the workspace's webhooks (no paging)",
    responses: { 200: { description: "Every webhook of the workspace, without tokens.", body: webhookListSchema }, ...API_KEY_RESPONSES },
    handler: async (request, reply) => {
      const res = await deps.clients.webhooks.listWebhooks({ workspaceId: workspaceOf(request) }, rpcOptions(request));
      return reply.send({ webhooks: res.webhooks.map(webhookListItemJson) });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/webhooks/:id",
    operationId: "getWebhook",
    tags: ["Webhooks"],
    summary: "Read a webhook",
    params: webhookIdParams,
    responses: { 200: { description: "The webhook.", body: webhookEnvelope }, 404: notFound404, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params: { id } }) => {
      checkWebhookId(id);
      const res = await deps.clients.webhooks.getWebhook({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.send({ webhook: webhookJson(res.webhook!) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/webhooks/:id",
    operationId: "updateWebhook",
    tags: ["Webhooks"],
    summary: "Update a webhook (POST, as the official client sends it)",
    description: "Fields left out are unchanged; `events` replaces the list. `status: ACTIVE` resumes a paused webhook and sends its held deliveries.",
    params: webhookIdParams,
    body: updateWebhookSchema,
    responses: { 200: { description: "The updated webhook.", body: webhookEnvelope }, 400: invalid400, 404: notFound404, ...API_KEY_RESPONSES, ...JSON_BODY_RESPONSES },
    handler: async (request, reply, { params: { id }, body }) => {
      checkWebhookId(id);
      const displayName = body.displayName ?? body.description;
      const res = await deps.clients.webhooks.updateWebhook(
        {
          workspaceId: workspaceOf(request),
          id,
          url: body.url,
          token: body.token,
          events: body.events ? { names: body.events } : undefined,
          status: statusValue(body.status),
          displayName,
        },
        rpcOptions(request),
      );
      return reply.send({ webhook: webhookJson(res.webhook!) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/webhooks/:id",
    operationId: "deleteWebhook",
    tags: ["Webhooks"],
    summary: "Delete a webhook",
    params: webhookIdParams,
    responses: { 200: { description: "The deleted webhook.", body: webhookDeletedSchema }, 404: notFound404, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params: { id } }) => {
      checkWebhookId(id);
      const res = await deps.clients.webhooks.deleteWebhook({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.send({ webhook: webhookJson(res.webhook!), isDeleted: res.isDeleted });
    },
  });
};

const deliveryParams = z.object({ ...webhookIdParams.shape, deliveryId: z.string().meta({ description: "A delivery id (`whd_…`)." }) });

/**
 * Mailroom's extensions: a test event on demand, recent deliveries with their attempts,
 * and sending one delivery again.
 */
export const registerWebhookDeliveries: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/webhooks/:id/test",
    operationId: "testWebhook",
    tags: ["Webhooks"],
    summary: "Send a TESTING_CONNECTION event now",
    description: "Whatever the webhook subscribes to. No body is needed.",
    params: webhookIdParams,
    responses: {
      200: { description: "The queued delivery (its attempts appear in the deliveries list).", body: deliveryEnvelope },
      404: notFound404,
      409: { description: "`webhook_not_active`: the webhook is paused; set its status to ACTIVE first.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params: { id } }) => {
      checkWebhookId(id);
      const res = await deps.clients.webhooks.sendTestEvent({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      return reply.send({ delivery: deliveryJson(res.delivery!) });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/webhooks/:id/deliveries",
    operationId: "listWebhookDeliveries",
    tags: ["Webhooks"],
    summary: "Recent deliveries of a webhook, newest first, with their attempts and response codes",
    params: webhookIdParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).optional().meta({ description: "Default 50, at most 200." }) }),
    responses: {
      200: { description: "Deliveries (kept 8 days).", body: deliveryListSchema },
      400: { description: "`invalid_request`: limit out of range.", body: apiErrorSchema },
      404: notFound404,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params: { id }, query }) => {
      checkWebhookId(id);
      const res = await deps.clients.webhooks.listDeliveries({ workspaceId: workspaceOf(request), webhookId: id, limit: query.limit ?? 0 }, rpcOptions(request));
      return reply.send({ deliveries: res.deliveries.map(deliveryJson) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/webhooks/:id/deliveries/:deliveryId/redeliver",
    operationId: "redeliverWebhookDelivery",
    tags: ["Webhooks"],
    summary: "Send one delivery again now",
    description: "Same body and `webhook-id`, a fresh retry schedule. No body is needed.",
    params: deliveryParams,
    responses: {
      200: { description: "The delivery, due now.", body: deliveryEnvelope },
      404: { description: "`webhook_not_found` or `delivery_not_found`.", body: apiErrorSchema },
      409: { description: "`webhook_not_active` (paused webhook) or `delivery_in_progress` (being sent right now).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params: { id, deliveryId } }) => {
      checkWebhookId(id);
      const res = await deps.clients.webhooks.redeliverDelivery({ workspaceId: workspaceOf(request), webhookId: id, deliveryId }, rpcOptions(request));
      return reply.send({ delivery: deliveryJson(res.delivery!) });
    },
  });
};
