import { payloadOf, webhookEventOf } from "./events.js";
import type { Delivery, MailEventData } from "./model.js";
import type { Clock, DeliveryStore, Ids, WebhookStore } from "./ports.js";

export interface DispatchDeps {
  /** The workspace's webhooks (a cached lookup, invalidated on change). */
  webhooks: Pick<WebhookStore, "list">;
  deliveries: Pick<DeliveryStore, "insertNew">;
  clock: Clock;
  ids: Pick<Ids, "deliveryId">;
}

/**
 * Turns one mail event into one delivery per subscribed ACTIVE endpoint of its workspace,
 * stored in the outbox (due now). Sending happens later from the outbox, so a slow
 * endpoint never holds up the stream. A replayed event finds its deliveries already
 * there (unique per event and webhook) and adds nothing. A webhook gets only events that
 * happened after it was created (the stream keeps a week of events, which a lagging or
 * new consumer reads). Returns how many were created.
 */
export async function dispatchMailEvent(deps: DispatchDeps, event: MailEventData): Promise<number> {
  const type = webhookEventOf(event.source, event.kind);
  if (!type || !event.workspaceId || !event.eventId) return 0;
  const endpoints = (await deps.webhooks.list(event.workspaceId)).filter(
    (w) => w.status === "ACTIVE" && w.events.includes(type) && w.createdAt.getTime() <= event.occurredAt.getTime(),
  );
  if (endpoints.length === 0) return 0;
  const body = JSON.stringify(payloadOf(event, type));
  const now = deps.clock.now();
  let created = 0;
  for (const webhook of endpoints) {
    const delivery: Delivery = {
      id: deps.ids.deliveryId(),
      webhookId: webhook.id,
      workspaceId: event.workspaceId,
      eventId: event.eventId,
      eventType: type,
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
