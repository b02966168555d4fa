import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, EVENTS_SUBJECTS, WEBHOOK_EVENTS_STREAM, WEBHOOK_EVENTS_SUBJECTS } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { DeliverySource, MailEventSchema, MailEventType, WebhookEventSchema, type MailEvent, type WebhookEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import { dispatchMailEvent, dispatchWebhookEvent, type DispatchDeps, type WebhookEventData } from "./domain/dispatch.js";
import type { MailEventData, MailEventKind, MailSource } from "./domain/model.js";

/** The dispatcher's own durable consumer: every outcome and tracking event. */
export const DISPATCH_DURABLE = "webhooks-dispatch";
/** Its durable consumer of WebhookEvents (EMAIL_SENT, BROADCAST_STARTED / COMPLETED). */
export const WEBHOOK_EVENTS_DURABLE = "webhooks-webhook-events";

const KIND: Partial<Record<MailEventType, MailEventKind>> = {
  [MailEventType.SENT]: "sent",
  [MailEventType.DEFERRED]: "deferred",
  [MailEventType.BOUNCED]: "bounced",
  [MailEventType.FAILED]: "failed",
  [MailEventType.OPENED]: "opened",
  [MailEventType.CLICKED]: "clicked",
  [MailEventType.UNSUBSCRIBED]: "unsubscribed",
  [MailEventType.COMPLAINED]: "complained",
  [MailEventType.SUPPRESSED]: "suppressed",
};

const SOURCE: Partial<Record<DeliverySource, MailSource>> = {
  [DeliverySource.TRANSACTIONAL]: "transactional",
  [DeliverySource.BROADCAST]: "broadcast",
  [DeliverySource.BROADCAST_TEST]: "broadcast_test",
};

const orUndefined = <T>(v: T): T | undefined => (v === "" || v === 0 ? undefined : v);

/** A MailEvent in domain terms; undefined for types and sources the domain does not know. */
export function mailEventOf(event: MailEvent, receivedAt: Date): MailEventData | undefined {
  const kind = KIND[event.type];
  const source = SOURCE[event.source];
  if (!kind || !source) return undefined;
  return {
    eventId: event.eventId,
    kind,
    source,
    workspaceId: event.workspaceId,
    occurredAt: event.occurredAt ? timestampDate(event.occurredAt) : receivedAt,
    deliveryId: orUndefined(event.deliveryId),
    emailId: orUndefined(event.emailId),
    broadcastId: orUndefined(event.broadcastId),
    messageId: orUndefined(event.messageId),
    recipient: orUndefined(event.recipient),
    contactId: orUndefined(event.contactId),
    detail: orUndefined(event.detail),
    smtpCode: orUndefined(event.smtpCode),
    attempt: orUndefined(event.attempt),
    url: orUndefined(event.url),
    groupBy: orUndefined(event.groupBy),
  };
}

/**
 * JetStream transport: decodes each MailEvent, lets the domain store its deliveries, and
 * acks once they are stored (a failure naks it; the redelivery finds what was already
 * stored and adds only the rest). New deliveries wake the outbox.
 */
export function consumeMailEvents(
  nc: NatsConnection,
  deps: DispatchDeps,
  wake: () => void,
  logger: Logger,
): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: EVENTS_STREAM, durable: DISPATCH_DURABLE, filterSubjects: [EVENTS_SUBJECTS], maxDeliver: 50, ackWaitMs: 30_000 },
    MailEventSchema,
    async (event) => {
      const data = mailEventOf(event, deps.clock.now());
      if (!data) return ack();
      const created = await dispatchMailEvent(deps, data);
      if (created > 0) {
        logger.debug({ eventId: data.eventId, workspaceId: data.workspaceId, deliveries: created }, "webhook deliveries stored");
        wake();
      }
      return ack();
    },
    { logger, concurrency: 32 },
  );
}

/** A WebhookEvent in domain terms; undefined when it lacks what a webhook needs or its data is not a JSON object. */
export function webhookEventOf(event: WebhookEvent, receivedAt: Date): WebhookEventData | undefined {
  if (!event.eventId || !event.type || !event.workspaceId) return undefined;
  let data: unknown;
  try {
    data = event.dataJson.length ? JSON.parse(new TextDecoder().decode(event.dataJson)) : {};
  } catch {
    return undefined;
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) return undefined;
  return {
    eventId: event.eventId,
    type: event.type,
    workspaceId: event.workspaceId,
    occurredAt: event.occurredAt ? timestampDate(event.occurredAt) : receivedAt,
    data: data as Record<string, unknown>,
  };
}

/**
 * JetStream transport of the WebhookEvents (WEBHOOK_EVENTS stream), as consumeMailEvents:
 * stored deliveries are unique per event id and webhook, so a redelivery sends nothing twice.
 */
export function consumeWebhookEvents(
  nc: NatsConnection,
  deps: DispatchDeps,
  wake: () => void,
  logger: Logger,
): Promise<ConsumeLoop> {
  return consumeProto(
    nc,
    { stream: WEBHOOK_EVENTS_STREAM, durable: WEBHOOK_EVENTS_DURABLE, filterSubjects: [WEBHOOK_EVENTS_SUBJECTS], maxDeliver: 50, ackWaitMs: 30_000 },
    WebhookEventSchema,
    async (event) => {
      const data = webhookEventOf(event, deps.clock.now());
      if (!data) {
        logger.warn({ eventId: event.eventId, type: event.type }, "webhook event dropped: no id, type, workspace or JSON data");
        return ack();
      }
      const created = await dispatchWebhookEvent(deps, data);
      if (created > 0) {
        logger.debug({ eventId: data.eventId, type: data.type, workspaceId: data.workspaceId, deliveries: created }, "webhook deliveries stored");
        wake();
      }
      return ack();
    },
    { logger, concurrency: 8 },
  );
}
