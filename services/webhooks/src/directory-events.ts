import type { NatsConnection } from "@nats-io/transport-node";
import { ack, consume, drop, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { DIRECTORY_EVENTS_STREAM, DIRECTORY_EVENTS_SUBJECTS } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { DispatchDeps } from "./domain/dispatch.js";
import { CLIENT_EVENTS, type Delivery, type WebhookEventName, type WebhookPayload } from "./domain/model.js";

/** The dispatcher's durable consumer of the directory's changes (CONTACT_*, WORKSPACE_TEAM_MEMBER_JOINED). */
export const DIRECTORY_DISPATCH_DURABLE = "webhooks-directory";

const NAMES: ReadonlySet<string> = new Set(CLIENT_EVENTS);

/** A directory event (already the webhook body), or undefined when it is not one. */
export function directoryEventOf(data: Uint8Array): WebhookPayload | undefined {
  try {
    const e = JSON.parse(new TextDecoder().decode(data)) as Partial<WebhookPayload>;
    if (typeof e?.id !== "string" || !e.id || typeof e.workspaceId !== "string" || !e.workspaceId) return undefined;
    if (typeof e.type !== "string" || !NAMES.has(e.type) || typeof e.createdAt !== "string" || Number.isNaN(Date.parse(e.createdAt))) return undefined;
    if (!e.data || typeof e.data !== "object") return undefined;
    return { id: e.id, type: e.type as WebhookEventName, createdAt: e.createdAt, workspaceId: e.workspaceId, data: e.data };
  } catch {
    return undefined;
  }
}

/**
 * One delivery per subscribed ACTIVE webhook of the event's workspace (created no later than
 * the event), stored in the outbox. Deliveries are unique per (event id, webhook), and the
 * directory derives the event id from the write, so a redelivered or republished event adds
 * nothing. Returns how many were created.
 */
export async function dispatchDirectoryEvent(deps: DispatchDeps, event: WebhookPayload): Promise<number> {
  const at = Date.parse(event.createdAt);
  const endpoints = (await deps.webhooks.list(event.workspaceId)).filter(
    (w) => w.status === "ACTIVE" && w.events.includes(event.type) && w.createdAt.getTime() <= at,
  );
  if (endpoints.length === 0) return 0;
  const body = JSON.stringify(event);
  const now = deps.clock.now();
  let created = 0;
  for (const webhook of endpoints) {
    const delivery: Delivery = {
      id: deps.ids.deliveryId(),
      webhookId: webhook.id,
      workspaceId: event.workspaceId,
      eventId: event.id,
      eventType: event.type,
      body,
      state: "PENDING",
      createdAt: now,
      attempts: 0,
      retryStep: 0,
      nextAttemptAt: now,
      history: [],
    };
    if (await deps.deliveries.insertNew(delivery)) created++;
  }
  return created;
}

/** JetStream transport of DIRECTORY_EVENTS: acks once the deliveries are stored, then wakes the outbox. */
export function consumeDirectoryEvents(nc: NatsConnection, deps: DispatchDeps, wake: () => void, logger: Logger): Promise<ConsumeLoop> {
  return consume(
    nc,
    { stream: DIRECTORY_EVENTS_STREAM, durable: DIRECTORY_DISPATCH_DURABLE, filterSubjects: [DIRECTORY_EVENTS_SUBJECTS], maxDeliver: 50, ackWaitMs: 30_000 },
    directoryEventOf,
    async (event) => {
      if (!event) return drop("not a directory event");
      const created = await dispatchDirectoryEvent(deps, event);
      if (created > 0) {
        logger.debug({ eventId: event.id, type: event.type, workspaceId: event.workspaceId, deliveries: created }, "webhook deliveries stored");
        wake();
      }
      return ack();
    },
    { logger, concurrency: 8 },
  );
}
