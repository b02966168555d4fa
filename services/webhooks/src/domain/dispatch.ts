import { payloadOf, webhookEventOf, webhookEventOfType } from "./events.js";
import type { Delivery, MailEventData, WebhookPayload } from "./model.js";
import type { Clock, DeliveryStore, Ids, WebhookStore } from "./ports.js";

export interface DispatchDeps {
  /** The workspace's webhooks (a cached lookup, invalidated on change). */
  webhooks: Pick<WebhookStore, "list">;
  deliveries: Pick<DeliveryStore, "insertNew">;
  clock: Clock;
  ids: Pick<Ids, "deliveryId">;
  /** The tags of recent emails, learnt from delivery's events (opens and clicks come without them). */
  emailTags?: EmailTags;
}

export type Tag = { name: string; value: string };

/** Tags of emails by (workspace, email id), kept a while after the email went out. */
export interface EmailTags {
  remember(workspaceId: string, emailId: string, tags: Tag[]): Promise<void>;
  find(workspaceId: string, emailId: string): Promise<Tag[] | undefined>;
}

/** Delivery's events carry the email's tags: the first of them is remembered. */
const TAGS_FROM: ReadonlySet<MailEventData["kind"]> = new Set(["sent", "deferred", "bounced", "failed"]);
/** Events published from a recipient's action (the gateway's tracking, the manage page): their tags are looked up. */
const TAGS_FOR: ReadonlySet<MailEventData["kind"]> = new Set(["opened", "clicked", "unsubscribed", "complained"]);

/** The event with its email's tags (DESIGN §9.5: every email event's webhook carries them). */
async function withTags(deps: DispatchDeps, event: MailEventData): Promise<MailEventData> {
  if (!deps.emailTags || !event.emailId || event.source !== "transactional") return event;
  if (event.tags?.length) {
    if (TAGS_FROM.has(event.kind)) await deps.emailTags.remember(event.workspaceId, event.emailId, event.tags);
    return event;
  }
  if (!TAGS_FOR.has(event.kind)) return event;
  const tags = await deps.emailTags.find(event.workspaceId, event.emailId);
  return tags?.length ? { ...event, tags } : event;
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
  return fanOut(deps, payloadOf(await withTags(deps, event), type));
}

/** A webhook event no MailEvent carries (EMAIL_SENT, BROADCAST_STARTED, …), as its producer published it. */
export interface WebhookEventData {
  eventId: string;
  type: string;
  workspaceId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}

/**
 * As dispatchMailEvent, for a WebhookEvent: its producer built `data`; the body around it is
 * the same `{ id, type, createdAt, workspaceId, data }`. A type that is not produced this way
 * (webhookEventOfType) sends nothing. A redelivered event adds nothing (unique per event and webhook).
 */
export async function dispatchWebhookEvent(deps: DispatchDeps, event: WebhookEventData): Promise<number> {
  const type = webhookEventOfType(event.type);
  if (!type || !event.workspaceId || !event.eventId) return 0;
  return fanOut(deps, { id: event.eventId, type, createdAt: event.occurredAt.toISOString(), workspaceId: event.workspaceId, data: event.data });
}

/**
 * A DIRECTORY_EVENTS event (CONTACT_*, WORKSPACE_*), which is already the webhook body: the
 * unit that wrote it (audience or accounts) derives its id from the write, so a redelivered or republished event adds nothing.
 */
export function dispatchDirectoryEvent(deps: DispatchDeps, event: WebhookPayload): Promise<number> {
  return fanOut(deps, event);
}

/**
 * THE fan-out of every webhook event, whoever produced it: one delivery per subscribed ACTIVE
 * webhook of the event's workspace created no later than the event (`createdAt`), stored in
 * the outbox due now. Deliveries are unique per (event id, webhook), so a replayed event adds
 * nothing. Returns how many were created.
 */
export async function fanOut(deps: DispatchDeps, p: WebhookPayload): Promise<number> {
  const occurredAt = Date.parse(p.createdAt);
  const type = p.type;
  const endpoints = (await deps.webhooks.list(p.workspaceId)).filter(
    (w) => w.status === "ACTIVE" && w.events.includes(type) && w.createdAt.getTime() <= occurredAt,
  );
  if (endpoints.length === 0) return 0;
  const body = JSON.stringify(p);
  const contactId = contactOf(p);
  const now = deps.clock.now();
  let created = 0;
  for (const webhook of endpoints) {
    const delivery: Delivery = {
      id: deps.ids.deliveryId(),
      webhookId: webhook.id,
      workspaceId: p.workspaceId,
      eventId: p.id,
      eventType: type,
      ...(contactId ? { contactId } : {}),
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

/** The contact a CONTACT_* event is about: `data.contact.id`, else `data.contactId`. */
export function contactOf(p: WebhookPayload): string | undefined {
  if (!p.type.startsWith("CONTACT_")) return undefined;
  const contact = p.data.contact as { id?: unknown } | undefined;
  const id = typeof contact?.id === "string" ? contact.id : p.data.contactId;
  return typeof id === "string" && id ? id : undefined;
}
