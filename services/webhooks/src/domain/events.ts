import type { MailEventData, MailEventKind, MailSource, WebhookEventName, WebhookPayload } from "./model.js";

/**
 * THE mapping from a MAIL_EVENTS event (its source and type) to the webhook event name a
 * receiver subscribes to. Anything not listed sends no webhook.
 *
 * - `sent` is the SMTP acceptance of the message (250 from the relay or receiving server):
 *   EMAIL_SENT. EMAIL_DELIVERED has no producer yet (no MailEvent reports final delivery).
 * - `suppressed` means nothing was sent because the address is on the suppression list:
 *   reported as EMAIL_FAILED (detail says why), as the email's own status does.
 * - Broadcast test sends (`broadcast_test`) are previews: no webhooks.
 * - BROADCAST_COMPLETED, CONTACT_TAG_*, WORKSPACE_SENDING_EMAILS_PAUSED and WORKSPACE_BANNED
 *   can be subscribed to but nothing produces them yet; TESTING_CONNECTION comes from SendTestEvent.
 * - CONTACT_CREATED / UPDATED / DELETED / UNSUBSCRIBED / RESUBSCRIBED / PROPERTY_UPDATED and
 *   WORKSPACE_TEAM_MEMBER_JOINED: the directory (DIRECTORY_EVENTS, ../directory-events.ts).
 */
const EMAIL_EVENT_OF: Record<MailEventKind, WebhookEventName> = {
  sent: "EMAIL_SENT",
  deferred: "EMAIL_DEFERRED",
  bounced: "EMAIL_BOUNCED",
  failed: "EMAIL_FAILED",
  suppressed: "EMAIL_FAILED",
  opened: "EMAIL_OPENED",
  clicked: "EMAIL_CLICKED",
  unsubscribed: "EMAIL_UNSUBSCRIBED",
  complained: "EMAIL_COMPLAINED",
};

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
