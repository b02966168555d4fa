import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  DeliveryAttemptSchema,
  DeliverySchema,
  DeliveryState as ProtoDeliveryState,
  WebhookSchema,
  WebhookService,
  WebhookStatus as ProtoStatus,
  type Delivery as ProtoDelivery,
  type DeliveryAttempt as ProtoAttempt,
  type Webhook as ProtoWebhook,
} from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { Delivery, DeliveryAttempt, DeliveryState, Webhook, WebhookStatus } from "./domain/model.js";
import type { Webhooks } from "./domain/webhooks.js";

const STATUS_OUT: Record<WebhookStatus, ProtoStatus> = {
  ACTIVE: ProtoStatus.ACTIVE,
  PAUSED: ProtoStatus.PAUSED,
  BANNED: ProtoStatus.BANNED,
};

const STATUS_IN: Partial<Record<ProtoStatus, WebhookStatus>> = {
  [ProtoStatus.ACTIVE]: "ACTIVE",
  [ProtoStatus.PAUSED]: "PAUSED",
  [ProtoStatus.BANNED]: "BANNED",
};

const DELIVERY_STATE: Record<DeliveryState, ProtoDeliveryState> = {
  PENDING: ProtoDeliveryState.PENDING,
  SUCCEEDED: ProtoDeliveryState.SUCCEEDED,
  FAILED: ProtoDeliveryState.FAILED,
  HELD: ProtoDeliveryState.HELD,
};

export function protoWebhook(w: Webhook): ProtoWebhook {
  return create(WebhookSchema, {
    id: w.id,
    workspaceId: w.workspaceId,
    url: w.url,
    events: w.events,
    displayName: w.displayName,
    status: STATUS_OUT[w.status],
    token: w.token,
    createdAt: timestampFromDate(w.createdAt),
    updatedAt: timestampFromDate(w.updatedAt),
    pausedReason: w.pausedReason ?? "",
    consecutiveFailures: w.consecutiveFailures ?? 0,
    ...(w.failingSince ? { failingSince: timestampFromDate(w.failingSince) } : {}),
  });
}

function protoAttempt(a: DeliveryAttempt): ProtoAttempt {
  return create(DeliveryAttemptSchema, {
    attempt: a.attempt,
    attemptedAt: timestampFromDate(new Date(a.attemptedAt)),
    statusCode: a.statusCode,
    durationMs: a.durationMs,
    error: a.error ?? "",
  });
}

export function protoDelivery(d: Delivery): ProtoDelivery {
  return create(DeliverySchema, {
    id: d.id,
    webhookId: d.webhookId,
    eventId: d.eventId,
    eventType: d.eventType,
    state: DELIVERY_STATE[d.state],
    createdAt: timestampFromDate(d.createdAt),
    attempts: d.attempts,
    // A held delivery has no next attempt until its webhook is resumed.
    nextAttemptAt: d.nextAttemptAt && d.state === "PENDING" ? timestampFromDate(d.nextAttemptAt) : undefined,
    lastAttempt: d.lastAttempt ? protoAttempt(d.lastAttempt) : undefined,
    history: d.history.map(protoAttempt),
  });
}

function statusIn(status: ProtoStatus): WebhookStatus | undefined {
  if (status === ProtoStatus.UNSPECIFIED) return undefined;
  const value = STATUS_IN[status];
  if (!value) throw badRequest("invalid_payload", "status must be one of: ACTIVE, PAUSED");
  return value;
}

/** The Connect WebhookService: proto in, proto out; refusals are the domain's AppErrors. */
export function webhookRoutes(webhooks: Webhooks) {
  return (router: ConnectRouter) =>
    router.service(WebhookService, {
      createWebhook: async (req) => ({
        webhook: protoWebhook(
          await webhooks.create(req.workspaceId, { url: req.url, events: req.events, token: req.token, displayName: req.displayName || undefined }),
        ),
      }),
      getWebhook: async (req) => ({ webhook: protoWebhook(await webhooks.get(req.workspaceId, req.id)) }),
      listWebhooks: async (req) => ({ webhooks: (await webhooks.list(req.workspaceId)).map(protoWebhook) }),
      updateWebhook: async (req) => ({
        webhook: protoWebhook(
          await webhooks.update(req.workspaceId, req.id, {
            url: req.url,
            token: req.token,
            events: req.events ? req.events.names : undefined,
            status: statusIn(req.status),
            displayName: req.displayName,
          }),
        ),
      }),
      deleteWebhook: async (req) => ({ webhook: protoWebhook(await webhooks.delete(req.workspaceId, req.id)), isDeleted: true }),
      sendTestEvent: async (req) => ({ delivery: protoDelivery(await webhooks.sendTestEvent(req.workspaceId, req.id)) }),
      listDeliveries: async (req) => {
        const page = await webhooks.pageDeliveries(req.workspaceId, req.webhookId, { limit: req.limit, cursor: req.cursor });
        return { deliveries: page.deliveries.map(protoDelivery), nextCursor: page.nextCursor ?? "" };
      },
      eraseContactDeliveries: async (req) => ({ erased: BigInt(await webhooks.eraseContactDeliveries(req.workspaceId, req.contactId)) }),
      listContactDeliveries: async (req) => ({
        deliveries: (await webhooks.listContactDeliveries(req.workspaceId, req.contactId, req.limit)).map(protoDelivery),
      }),
      redeliverDelivery: async (req) => ({
        delivery: protoDelivery(await webhooks.redeliver(req.workspaceId, req.webhookId, req.deliveryId)),
      }),
    });
}
