import type { NatsConnection } from "@nats-io/transport-node";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consume, drop, type ConsumeLoop, type ConsumerSpec } from "@mailroom/kit/jetstream.js";
import {
  DIRECTORY_EVENTS_STREAM,
  DIRECTORY_EVENTS_SUBJECTS,
  EVENTS_STREAM,
  EVENTS_SUBJECTS,
  WEBHOOK_EVENTS_STREAM,
  WEBHOOK_EVENTS_SUBJECTS,
} from "@mailroom/pipeline/subjects.js";
import { directoryEventsIn } from "@mailroom/pipeline/directory-events.js";
import { deliverySourceNameOf } from "@mailroom/pipeline/delivery-source.js";
import type { DeliverySourceName } from "@mailroom/pipeline/work.js";
import type { Logger } from "@mailroom/kit/logger.js";
import { MailEventSchema, MailEventType, WebhookEventSchema, type MailEvent, type WebhookEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { dispatchDirectoryEvent, dispatchMailEvent, dispatchWebhookEvent, type DispatchDeps, type WebhookEventData } from "./domain/dispatch.js";
import { CLIENT_EVENTS, SUPPRESSION_EVENTS, type MailEventData, type MailEventKind, type MailSource, type WebhookEventName, type WebhookPayload } from "./domain/model.js";

/** The dispatcher's own durable consumer: every outcome and tracking event. */
export const DISPATCH_DURABLE = "webhooks-dispatch";
/** Its durable consumer of WebhookEvents (EMAIL_SENT, BROADCAST_STARTED / COMPLETED). */
export const WEBHOOK_EVENTS_DURABLE = "webhooks-webhook-events";
/**
 * Its durable consumer of DIRECTORY_EVENTS: the audience unit's changes (CONTACT_*,
 * SUPPRESSION_*) and the accounts unit's (WORKSPACE_*). The name stays: the durable exists.
 */
export const DIRECTORY_DISPATCH_DURABLE = "webhooks-directory";

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
  // Not here, on purpose: DELIVERED (a provider's confirmation; EMAIL_DELIVERED came from SENT)
  // and REPLIED (DESIGN §10.4: the reply itself is the EMAIL_RECEIVED webhook, with its
  // inReplyTo; no EMAIL_REPLIED event is subscribable). mailEventOf ignores them.
};

/** The pipeline's source names, but for a test send's: webhooks call it broadcast_test. */
const SOURCE: Record<DeliverySourceName, MailSource> = { transactional: "transactional", broadcast: "broadcast", test: "broadcast_test" };

const orUndefined = <T>(v: T): T | undefined => (v === "" || v === 0 ? undefined : v);

/** A MailEvent in domain terms; undefined for types and sources the domain does not know. */
export function mailEventOf(event: MailEvent, receivedAt: Date): MailEventData | undefined {
  const kind = KIND[event.type];
  const name = deliverySourceNameOf(event.source);
  const source = name && SOURCE[name];
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
    tags: event.tags.length ? event.tags.map((t) => ({ name: t.name, value: t.value })) : undefined,
  };
}

/** What one consumed message came to: deliveries stored for an event, or a message dropped as not an event. */
type Dispatched = { created: number; eventId: string; type: string; workspaceId: string } | { malformed: string } | undefined;

/**
 * THE consumer setup of the dispatcher's three sources (MailEvents, WebhookEvents,
 * DIRECTORY_EVENTS): a durable consumer that decodes each message, lets the domain store its
 * deliveries (fanOut), and acks once they are stored (a failure retries it; the redelivery
 * finds what was already stored and adds only the rest). New deliveries wake the outbox; a
 * message that is not an event is dropped with its reason.
 */
function consumeForDispatch<T>(
  nc: NatsConnection,
  spec: Pick<ConsumerSpec, "stream" | "durable" | "filterSubjects">,
  decode: (data: Uint8Array) => T,
  dispatch: (message: T) => Promise<Dispatched>,
  wake: () => void,
  logger: Logger,
  concurrency: number,
): Promise<ConsumeLoop> {
  return consume(
    nc,
    { ...spec, maxDeliver: 50, ackWaitMs: 30_000 },
    decode,
    async (message) => {
      const result = await dispatch(message);
      if (result && "malformed" in result) {
        logger.warn({ stream: spec.stream, reason: result.malformed }, "message dropped: not an event");
        return drop(result.malformed);
      }
      if (result && result.created > 0) {
        const { created: deliveries, ...event } = result;
        logger.debug({ ...event, deliveries }, "webhook deliveries stored");
        wake();
      }
      return ack();
    },
    { logger, concurrency },
  );
}

/** MailEvents (outcomes and tracking): a type or source that sends no webhook is acked unread. */
export function consumeMailEvents(nc: NatsConnection, deps: DispatchDeps, wake: () => void, logger: Logger): Promise<ConsumeLoop> {
  return consumeForDispatch(
    nc,
    { stream: EVENTS_STREAM, durable: DISPATCH_DURABLE, filterSubjects: [EVENTS_SUBJECTS] },
    (bytes) => fromBinary(MailEventSchema, bytes),
    async (event) => {
      const data = mailEventOf(event, deps.clock.now());
      if (!data) return undefined;
      return { created: await dispatchMailEvent(deps, data), eventId: data.eventId, type: data.kind, workspaceId: data.workspaceId };
    },
    wake,
    logger,
    32,
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
 * WebhookEvents (WEBHOOK_EVENTS stream: EMAIL_SENT, BROADCAST_STARTED / COMPLETED): stored
 * deliveries are unique per event id and webhook, so a redelivery sends nothing twice.
 */
export function consumeWebhookEvents(nc: NatsConnection, deps: DispatchDeps, wake: () => void, logger: Logger): Promise<ConsumeLoop> {
  return consumeForDispatch(
    nc,
    { stream: WEBHOOK_EVENTS_STREAM, durable: WEBHOOK_EVENTS_DURABLE, filterSubjects: [WEBHOOK_EVENTS_SUBJECTS] },
    (bytes) => fromBinary(WebhookEventSchema, bytes),
    async (event) => {
      const data = webhookEventOf(event, deps.clock.now());
      if (!data) return { malformed: `webhook event ${event.eventId || "(no id)"} of type ${event.type || "(none)"}: no id, type, workspace or JSON data` };
      return { created: await dispatchWebhookEvent(deps, data), eventId: data.eventId, type: data.type, workspaceId: data.workspaceId };
    },
    wake,
    logger,
    8,
  );
}

/** What the audience and accounts units announce on DIRECTORY_EVENTS: the client's contact and workspace events, and suppression changes. */
const CLIENT_EVENT_NAMES: ReadonlySet<string> = new Set([...CLIENT_EVENTS, ...SUPPRESSION_EVENTS]);

/** A DIRECTORY_EVENTS event (already the webhook body), or undefined when it is not one. */
export function directoryEventOf(data: Uint8Array): WebhookPayload | undefined {
  const events = directoryEventsIn(data);
  return events?.length === 1 ? payloadOfDirectoryEvent(events[0]) : undefined;
}

/**
 * The events of a DIRECTORY_EVENTS message: one event, or a batch of one write's events
 * (`{ events: [...] }`, an import's suppressions); undefined when it holds none. An entry
 * that is not an event is left out (the others are still delivered).
 */
export function directoryEventsOf(data: Uint8Array): WebhookPayload[] | undefined {
  const events = directoryEventsIn(data)?.map(payloadOfDirectoryEvent).filter((e): e is WebhookPayload => e !== undefined);
  return events?.length ? events : undefined;
}

function payloadOfDirectoryEvent(value: unknown): WebhookPayload | undefined {
  const e = value as Partial<WebhookPayload> | null;
  if (!e || typeof e !== "object") return undefined;
  if (typeof e.id !== "string" || !e.id || typeof e.workspaceId !== "string" || !e.workspaceId) return undefined;
  if (typeof e.type !== "string" || !CLIENT_EVENT_NAMES.has(e.type) || typeof e.createdAt !== "string" || Number.isNaN(Date.parse(e.createdAt))) return undefined;
  if (!e.data || typeof e.data !== "object") return undefined;
  return { id: e.id, type: e.type as WebhookEventName, createdAt: e.createdAt, workspaceId: e.workspaceId, data: e.data };
}

/**
 * The audience and accounts units' changes (DIRECTORY_EVENTS: CONTACT_*, SUPPRESSION_*; WORKSPACE_*), each
 * already the webhook body; a batch message's events are fanned out one by one, and it is
 * acked once all their deliveries are stored (a redelivery adds only what is missing).
 */
export function consumeDirectoryEvents(nc: NatsConnection, deps: DispatchDeps, wake: () => void, logger: Logger): Promise<ConsumeLoop> {
  return consumeForDispatch(
    nc,
    { stream: DIRECTORY_EVENTS_STREAM, durable: DIRECTORY_DISPATCH_DURABLE, filterSubjects: [DIRECTORY_EVENTS_SUBJECTS] },
    directoryEventsOf,
    async (events) => {
      if (!events) return { malformed: "not a directory event" };
      let created = 0;
      for (const event of events) created += await dispatchDirectoryEvent(deps, event);
      const first = events[0];
      return { created, eventId: events.length === 1 ? first.id : `${first.id} (+${events.length - 1})`, type: first.type, workspaceId: first.workspaceId };
    },
    wake,
    logger,
    8,
  );
}
