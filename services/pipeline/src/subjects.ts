/**
 * The one table of the mail pipeline's JetStream stream names and subjects (kit is plumbing
 * and knows none of them). Every publisher, consumer filter and stream definition
 * (streams.ts) takes its names from here; no "mail.…" literal lives elsewhere.
 *
 *   MAIL_DELIVERY (work queue)  mail.delivery.transactional          transactional jobs
 *                               mail.delivery.test                   broadcast test sends
 *                               mail.delivery.broadcast.<broadcast>  broadcast jobs
 *   MAIL_EVENTS (kept 7 days)   mail.events.<source>.<kind>          outcomes and tracking
 *   CONTACT_EVENTS (kept 30 days) contact.events.<event name>        contact events (POST /v1/events)
 *   DIRECTORY_EVENTS (kept 7 days) directory.events.<TYPE>             contact/property/member/workspace changes (webhooks)
 *   WEBHOOK_EVENTS (kept 7 days) webhook.events.<TYPE>               webhook events no MailEvent carries
 */
import type { DeliverySourceName } from "./work.js";

/** Work queue of delivery jobs: each job is held until one worker acks it. */
export const DELIVERY_STREAM = "MAIL_DELIVERY";
/** Everything the delivery stream holds (both lanes). */
export const DELIVERY_SUBJECTS = "mail.delivery.>";
/** Outcomes and tracking events, kept for replay; several services consume them. */
export const EVENTS_STREAM = "MAIL_EVENTS";
export const EVENTS_SUBJECTS = "mail.events.>";

/** Where a delivery job comes from (work.ts); also the <source> token of its events. */
export type { DeliverySourceName };

/**
 * The subject of a delivery job. Broadcast jobs carry their broadcast id as the last
 * token, so one broadcast's unreleased jobs can be found (or purged) by subject.
 * Today's transactional subject is kept as it is: jobs already queued stay valid.
 */
export function deliveryJobSubject(source: DeliverySourceName, broadcastId = ""): string {
  if (source !== "broadcast") return `mail.delivery.${source}`;
  return `mail.delivery.broadcast.${subjectToken(broadcastId || "unknown")}`;
}

/**
 * The two lanes to delivery (DESIGN §3): transactional mail never waits behind a broadcast.
 * Each lane is one durable consumer with one filter (nats-server 2.9 takes a single filter
 * per consumer). On a work-queue stream the filters must not overlap: the transactional
 * lane takes the three-token subjects (transactional, test), the broadcast lane the
 * four-token ones (broadcast.<id>).
 */
export const DELIVERY_LANES = {
  transactional: { durable: "delivery-transactional", filter: "mail.delivery.*" },
  broadcast: { durable: "delivery-broadcast", filter: "mail.delivery.broadcast.>" },
} as const;
export type DeliveryLane = keyof typeof DELIVERY_LANES;

export function deliveryLaneOf(source: DeliverySourceName): DeliveryLane {
  return source === "broadcast" ? "broadcast" : "transactional";
}

/**
 * The single durable consumer of releases before the lanes (filter mail.delivery.>). The
 * delivery service deletes it on start, before it creates the two lane consumers above.
 */
export const DELIVERY_DURABLE = "delivery";

/** Subject of an event: mail.events.<source>.<kind>, e.g. mail.events.transactional.sent. */
export function eventSubject(source: string, kind: string): string {
  return `mail.events.${subjectToken(source)}.${subjectToken(kind)}`;
}

/** Filter for every event of one source, e.g. mail.events.transactional.>. */
export function eventsOfSource(source: string): string {
  return `mail.events.${subjectToken(source)}.>`;
}

/** A subject token may not be empty nor hold '.', '*', '>' or whitespace. */
function subjectToken(value: string): string {
  if (!/^[^.*>\s]+$/.test(value)) throw new Error(`"${value}" cannot be a subject token`);
  return value;
}

/**
 * Contact events (POST /v1/events) have their own stream: their payload is a
 * mailroom.audience.v1.ContactEvent, not a MailEvent, so consumers of mail.events.> (the
 * webhook dispatcher) never have to tell two message types apart on one subject space.
 * Subject: contact.events.<name>, the name's dots made "_" (one token; the payload carries
 * the exact name).
 */
export const CONTACT_EVENTS_STREAM = "CONTACT_EVENTS";
export const CONTACT_EVENTS_SUBJECTS = "contact.events.>";
export function contactEventSubject(eventName: string): string {
  return `contact.events.${subjectToken(eventName.replaceAll(".", "_"))}`;
}

/** Filter for one kind of event of every source, e.g. mail.events.*.sent. */
export function eventsOfKind(kind: string): string {
  return `mail.events.*.${subjectToken(kind)}`;
}

/**
 * Webhook events that are not delivery outcomes (EMAIL_SENT at acceptance, BROADCAST_STARTED
 * / BROADCAST_COMPLETED): a mailroom.events.v1.WebhookEvent each, on their own stream for the
 * same reason as contact events. Subject: webhook.events.<TYPE>, e.g. webhook.events.EMAIL_SENT.
 */
export const WEBHOOK_EVENTS_STREAM = "WEBHOOK_EVENTS";
export const WEBHOOK_EVENTS_SUBJECTS = "webhook.events.>";
export function webhookEventSubject(type: string): string {
  return `webhook.events.${subjectToken(type)}`;
}

/**
 * Changes the audience unit made (CONTACT_CREATED, CONTACT_UPDATED, …, SUPPRESSION_*) and the
 * accounts unit made (WORKSPACE_*, DESIGN §9.2), for the webhooks and automation units. Their
 * own stream, apart from CONTACT_EVENTS: those are the tenant's custom events (POST
 * /v1/events, protobuf), these are the two units' writes (JSON, already the webhook body), so
 * neither stream's consumers see the other's messages.
 * Subject: directory.events.<TYPE>, e.g. directory.events.CONTACT_CREATED. The stream and
 * subject names are from before the directory was split and stay: stored messages and the
 * consumers' durables depend on them.
 */
export const DIRECTORY_EVENTS_STREAM = "DIRECTORY_EVENTS";
export const DIRECTORY_EVENTS_SUBJECTS = "directory.events.>";
export function directoryEventSubject(type: string): string {
  return `directory.events.${subjectToken(type)}`;
}
