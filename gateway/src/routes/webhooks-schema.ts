import { z } from "zod";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  DeliveryState,
  WebhookStatus,
  type Delivery,
  type DeliveryAttempt,
  type Webhook,
} from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { refusal } from "@mailroom/http/errors.js";

/**
 * The public JSON of webhooks (sdk-wire-contract §9) and of their deliveries (a Mailroom
 * extension). Only the shape is checked here; the webhooks service validates values
 * (URL, event names, token, status) and answers `invalid_payload` naming what it allows.
 */

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : undefined);

const STATUS_NAMES: Partial<Record<WebhookStatus, string>> = {
  [WebhookStatus.ACTIVE]: "ACTIVE",
  [WebhookStatus.PAUSED]: "PAUSED",
  [WebhookStatus.BANNED]: "BANNED",
};
const STATUS_VALUES: Record<string, WebhookStatus> = { ACTIVE: WebhookStatus.ACTIVE, PAUSED: WebhookStatus.PAUSED, BANNED: WebhookStatus.BANNED };
const STATES: Partial<Record<DeliveryState, string>> = {
  [DeliveryState.PENDING]: "PENDING",
  [DeliveryState.SUCCEEDED]: "SUCCEEDED",
  [DeliveryState.FAILED]: "FAILED",
  [DeliveryState.HELD]: "HELD",
};

/** Webhook ids are wh_ + a ULID; anything else cannot exist. */
export const WEBHOOK_ID = /^wh_[0-9A-Za-z]{1,64}$/;

export const webhookIdParams = z.object({ id: z.string().meta({ description: "A webhook id (`wh_…`); anything else is a 404." }) });

export function checkWebhookId(id: string): void {
  if (!WEBHOOK_ID.test(id)) throw refusal({ code: "webhook_not_found", message: `Webhook ${id.slice(0, 64)} not found` });
}

/** The requested status as the service's enum (a wrong value is the service's 400). */
export function statusValue(status: string | undefined): WebhookStatus {
  if (status === undefined) return WebhookStatus.UNSPECIFIED;
  const value = STATUS_VALUES[status];
  if (value === undefined) throw refusal({ code: "invalid_payload", message: "status must be one of: ACTIVE, PAUSED", extra: { allowedValues: ["ACTIVE", "PAUSED"] } });
  return value;
}

/** The full resource (create, get, update, delete): every field of §9.1. */
export function webhookJson(w: Webhook): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: w.id,
    url: w.url,
    events: w.events,
    displayName: w.displayName,
    status: STATUS_NAMES[w.status] ?? "ACTIVE",
    token: w.token,
    createdAt: iso(w.createdAt),
    updatedAt: iso(w.updatedAt),
    workspaceId: w.workspaceId,
  };
  if (w.displayName) out.description = w.displayName;
  if (w.pausedReason) out.pausedReason = w.pausedReason;
  return out;
}

/** A list item (§9.2): no token in listings. */
export function webhookListItemJson(w: Webhook): Record<string, unknown> {
  const out: Record<string, unknown> = { id: w.id, url: w.url, events: w.events, status: STATUS_NAMES[w.status] ?? "ACTIVE", createdAt: iso(w.createdAt) };
  if (w.displayName) out.description = w.displayName;
  if (w.pausedReason) out.pausedReason = w.pausedReason;
  return out;
}

function attemptJson(a: DeliveryAttempt): Record<string, unknown> {
  const out: Record<string, unknown> = { attempt: a.attempt, attemptedAt: iso(a.attemptedAt), statusCode: a.statusCode, durationMs: a.durationMs };
  if (a.error) out.error = a.error;
  return out;
}

export function deliveryJson(d: Delivery): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: d.id,
    webhookId: d.webhookId,
    eventId: d.eventId,
    eventType: d.eventType,
    state: STATES[d.state] ?? "PENDING",
    createdAt: iso(d.createdAt),
    attempts: d.attempts,
    history: d.history.map(attemptJson),
  };
  if (d.nextAttemptAt) out.nextAttemptAt = iso(d.nextAttemptAt);
  if (d.lastAttempt) out.lastAttempt = attemptJson(d.lastAttempt);
  return out;
}

// --- schemas (requests are shape-checked here; the service checks values) -------------------

// The request schemas are @mailroom/http/webhooks-schema.js: the console's form parses with them too.

const STATUS_ENUM = z.enum(["ACTIVE", "PAUSED", "BANNED"]);
const isoField = z.iso.datetime();

const webhookSchema = z
  .strictObject({
    id: z.string().regex(WEBHOOK_ID),
    url: z.string(),
    events: z.array(z.string()),
    displayName: z.string(),
    description: z.string().optional(),
    status: STATUS_ENUM,
    token: z.string(),
    createdAt: isoField,
    updatedAt: isoField.optional(),
    workspaceId: z.string(),
    pausedReason: z.string().optional().meta({ description: "Why the webhook was paused automatically." }),
  })
  .meta({ id: "Webhook" });

export const webhookEnvelope = z.strictObject({ webhook: webhookSchema }).meta({ id: "WebhookResponse" });
export const webhookDeletedSchema = z.strictObject({ webhook: webhookSchema, isDeleted: z.boolean() }).meta({ id: "WebhookDeleted" });
export const webhookListSchema = z
  .strictObject({
    webhooks: z.array(
      z.strictObject({
        id: z.string(),
        url: z.string(),
        events: z.array(z.string()),
        status: STATUS_ENUM,
        description: z.string().optional(),
        pausedReason: z.string().optional(),
        createdAt: isoField,
      }),
    ),
  })
  .meta({ id: "WebhookList" });

const attemptSchema = z.strictObject({
  attempt: z.number().int(),
  attemptedAt: isoField,
  statusCode: z.number().int().meta({ description: "The receiver's HTTP status; 0 when no answer came (timeout, connection error)." }),
  durationMs: z.number().int(),
  error: z.string().optional(),
});

const deliverySchema = z
  .strictObject({
    id: z.string().meta({ description: "`whd_…`; also the `webhook-id` header, the same on every retry." }),
    webhookId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    state: z.enum(["PENDING", "SUCCEEDED", "FAILED", "HELD"]),
    createdAt: isoField,
    attempts: z.number().int(),
    nextAttemptAt: isoField.optional(),
    lastAttempt: attemptSchema.optional(),
    history: z.array(attemptSchema).meta({ description: "The most recent attempts, oldest first." }),
  })
  .meta({ id: "WebhookDelivery" });

export const deliveryEnvelope = z.strictObject({ delivery: deliverySchema }).meta({ id: "WebhookDeliveryResponse" });
export const deliveryListSchema = z.strictObject({ deliveries: z.array(deliverySchema) }).meta({ id: "WebhookDeliveryList" });
