import type { MailEventData, MailEventKind, MailSource, WebhookEventName, WebhookPayload } from "./model.js";

/**
 * THE mapping from a MAIL_EVENTS event (its source and type) to the webhook event name a
 * receiver subscribes to. Anything not listed sends no webhook. One producer per webhook
 * event (DESIGN §9.2):
 *
 * - `sent` is the SMTP acceptance of the message by the next hop (250 from the relay or
 *   receiving server; the email record's DELIVERED): EMAIL_DELIVERED.
 * - EMAIL_SENT (accepted and queued, the record's SENT) is not a MailEvent: the email
 *   service publishes it as a WebhookEvent once the delivery job is queued, as the broadcast
 *   service does BROADCAST_STARTED / BROADCAST_COMPLETED and the automation unit
 *   AUTOMATION_RUN_STARTED / COMPLETED / EXITED (see webhookEventOfType).
 * - `suppressed` means nothing was sent because the address is on the suppression list:
 *   reported as EMAIL_FAILED (detail says why), as the email's own status does.
 * - Broadcast test sends (`broadcast_test`) are previews: no webhooks.
 * - CONTACT_TAG_ADDED / CONTACT_TAG_REMOVED: the audience unit, when a contact joins / leaves a
 *   group (the group is the tag; deleting a group sends none); TESTING_CONNECTION comes from
 *   SendTestEvent. A name nothing produces would be refused (EVENTS_NOT_AVAILABLE, 400
 *   event_not_available); none is today.
 * - WORKSPACE_SENDING_EMAILS_PAUSED / WORKSPACE_BANNED: the accounts unit (an operator's pause or ban).
 * - CONTACT_CREATED / UPDATED / DELETED / UNSUBSCRIBED / RESUBSCRIBED / PROPERTY_UPDATED: the
 *   audience unit; WORKSPACE_TEAM_MEMBER_JOINED: the accounts unit (both on DIRECTORY_EVENTS,
 *   ../consumers.ts).
 */
const EMAIL_EVENT_OF: Record<MailEventKind, WebhookEventName> = {
  sent: "EMAIL_DELIVERED",
  deferred: "EMAIL_DEFERRED",
  bounced: "EMAIL_BOUNCED",
  failed: "EMAIL_FAILED",
  suppressed: "EMAIL_FAILED",
  opened: "EMAIL_OPENED",
  clicked: "EMAIL_CLICKED",
  unsubscribed: "EMAIL_UNSUBSCRIBED",
  complained: "EMAIL_COMPLAINED",
};

/**
 * The webhook events that arrive as WebhookEvents (WEBHOOK_EVENTS stream) and who produces
 * each: a type not listed is dropped, so no event gets a second producer by accident.
 */
const PRODUCED_AS_WEBHOOK_EVENTS: ReadonlySet<WebhookEventName> = new Set<WebhookEventName>([
  "EMAIL_SENT", // email service, when the email's delivery job is queued
  "BROADCAST_STARTED", // broadcast service, when the status became IN_PROGRESS
  "BROADCAST_COMPLETED", // broadcast service, the winner of the IN_PROGRESS -> COMPLETED CAS
  "AUTOMATION_RUN_STARTED", // automation unit, once the run is stored
  "AUTOMATION_RUN_COMPLETED", // automation unit, once the run's last step is recorded
  "AUTOMATION_RUN_EXITED", // automation unit, once the run's exit is recorded
  "EMAIL_RECEIVED", // inbound unit, once the received email is stored (DESIGN §10.4)
]);

/** The webhook event name of a WebhookEvent's type; undefined for a type nobody should produce there. */
export function webhookEventOfType(type: string): WebhookEventName | undefined {
  return PRODUCED_AS_WEBHOOK_EVENTS.has(type as WebhookEventName) ? (type as WebhookEventName) : undefined;
}

const SOURCES_WITH_WEBHOOKS: ReadonlySet<MailSource> = new Set(["transactional", "broadcast"]);

export function webhookEventOf(source: MailSource, kind: MailEventKind): WebhookEventName | undefined {
  return SOURCES_WITH_WEBHOOKS.has(source) ? EMAIL_EVENT_OF[kind] : undefined;
}

/**
 * The body of a webhook. The event's id and time are inside the signed body, so a receiver
 * can drop replays by id; `data` carries only the fields the event has.
 */
export function payloadOf(event: MailEventData, type: WebhookEventName): WebhookPayload {
  const data: Record<string, unknown> = { source: event.source };
  const fields: Array<[string, unknown]> = [
    ["emailId", event.emailId],
    ["broadcastId", event.broadcastId],
    ["messageId", event.messageId],
    ["to", event.recipient],
    ["contactId", event.contactId],
    ["url", event.url],
    ["smtpCode", event.smtpCode],
    ["detail", event.detail],
    ["groupBy", event.groupBy],
    ["attempt", event.attempt],
  ];
  for (const [key, value] of fields) if (value !== undefined && value !== "" && value !== 0) data[key] = value;
  if (event.tags?.length) data.tags = event.tags.map((t) => ({ name: t.name, value: t.value }));
  if (event.kind === "suppressed") data.suppressed = true;
  return { id: event.eventId, type, createdAt: event.occurredAt.toISOString(), workspaceId: event.workspaceId, data };
}

/** The body of a TESTING_CONNECTION event. */
export function testPayload(eventId: string, workspaceId: string, webhookId: string, at: Date): WebhookPayload {
  return {
    id: eventId,
    type: "TESTING_CONNECTION",
    createdAt: at.toISOString(),
    workspaceId,
    data: { webhookId, message: "This is a test event sent to check your webhook endpoint." },
  };
}
