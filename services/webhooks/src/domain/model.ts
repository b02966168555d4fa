/** The webhook domain's records, in plain TypeScript (no protobuf, no store documents). */

/** The event names the official client knows (sdk-wire-contract §9.1). */
export const CLIENT_EVENTS = [
  "CONTACT_CREATED",
  "CONTACT_DELETED",
  "CONTACT_PROPERTY_UPDATED",
  "CONTACT_RESUBSCRIBED",
  "CONTACT_TAG_ADDED",
  "CONTACT_TAG_REMOVED",
  "CONTACT_UNSUBSCRIBED",
  "CONTACT_UPDATED",
  "WORKSPACE_BANNED",
  "WORKSPACE_SENDING_EMAILS_PAUSED",
  "WORKSPACE_TEAM_MEMBER_JOINED",
  "TESTING_CONNECTION",
] as const;

/** Email and broadcast outcomes, the ones Resend and Postmark users subscribe to, and automation runs (DESIGN §9.6). */
export const EMAIL_EVENTS = [
  "EMAIL_SENT",
  "EMAIL_DELIVERED",
  "EMAIL_DEFERRED",
  "EMAIL_BOUNCED",
  "EMAIL_COMPLAINED",
  "EMAIL_OPENED",
  "EMAIL_CLICKED",
  "EMAIL_UNSUBSCRIBED",
  "EMAIL_FAILED",
  "BROADCAST_STARTED",
  "BROADCAST_COMPLETED",
  "AUTOMATION_RUN_STARTED",
  "AUTOMATION_RUN_COMPLETED",
  "AUTOMATION_RUN_EXITED",
  "EMAIL_RECEIVED",
] as const;

/** The suppression list's changes (DESIGN §10.3), from the audience unit: `data` `{ suppression: { email | domain, reason, createdAt, source? } }`. */
export const SUPPRESSION_EVENTS = ["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"] as const;

export const WEBHOOK_EVENTS: readonly string[] = [...CLIENT_EVENTS, ...EMAIL_EVENTS, ...SUPPRESSION_EVENTS];

/**
 * Known names nothing produces yet, with what brings their producer: a subscription to one is
 * refused (400 event_not_available) rather than accepted and never delivered (DESIGN §9.2).
 * None today: groups (DESIGN §9.4) brought the last ones, CONTACT_TAG_ADDED / CONTACT_TAG_REMOVED.
 */
export const EVENTS_NOT_AVAILABLE: Readonly<Partial<Record<string, string>>> = {};
export type WebhookEventName = (typeof CLIENT_EVENTS)[number] | (typeof EMAIL_EVENTS)[number] | (typeof SUPPRESSION_EVENTS)[number];

export type WebhookStatus = "ACTIVE" | "PAUSED" | "BANNED";

export interface Webhook {
  id: string;
  workspaceId: string;
  url: string;
  events: WebhookEventName[];
  displayName: string;
  status: WebhookStatus;
  /** The signing secret; never logged. */
  token: string;
  createdAt: Date;
  updatedAt: Date;
  /** Set when the webhook was paused because its deliveries kept failing. */
  pausedReason?: string;
  /** Attempts failed in a row since the last success (the pause rule's input). */
  consecutiveFailures: number;
  /** The first failure of the current run of failures. */
  failingSince?: Date;
}

/** What a sender must give to create a webhook. */
export interface CreateWebhookInput {
  url: string;
  events: string[];
  token?: string;
  displayName?: string;
}

export interface UpdateWebhookInput {
  url?: string;
  token?: string;
  events?: string[];
  status?: WebhookStatus;
  displayName?: string;
}

/** Where an outcome came from (MailEvent's DeliverySource). */
export type MailSource = "transactional" | "broadcast" | "broadcast_test";

/** MailEventType in domain terms. */
export type MailEventKind =
  | "sent"
  | "deferred"
  | "bounced"
  | "failed"
  | "opened"
  | "clicked"
  | "unsubscribed"
  | "complained"
  | "suppressed";

/** One event of the MAIL_EVENTS stream, decoded. */
export interface MailEventData {
  eventId: string;
  kind: MailEventKind;
  source: MailSource;
  workspaceId: string;
  occurredAt: Date;
  deliveryId?: string;
  emailId?: string;
  broadcastId?: string;
  messageId?: string;
  recipient?: string;
  contactId?: string;
  detail?: string;
  smtpCode?: number;
  attempt?: number;
  url?: string;
  groupBy?: string;
  /** The email's tags (DESIGN §9.5), in the client's `[{ name, value }]` shape. */
  tags?: Array<{ name: string; value: string }>;
}

/** The JSON body a receiver gets (built once, so every retry sends the same bytes). */
export interface WebhookPayload {
  id: string;
  type: WebhookEventName;
  createdAt: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

export type DeliveryState = "PENDING" | "SUCCEEDED" | "FAILED" | "HELD";

export interface DeliveryAttempt {
  attempt: number;
  attemptedAt: Date;
  /** 0 when no HTTP answer came. */
  statusCode: number;
  durationMs: number;
  error?: string;
}

export interface Delivery {
  /** whd_…; sent as webhook-id, the same on every retry. */
  id: string;
  webhookId: string;
  workspaceId: string;
  eventId: string;
  eventType: WebhookEventName;
  /** The contact a CONTACT_* event is about (its webhook history on the console's contact page). */
  contactId?: string;
  /** The exact body bytes (UTF-8 JSON) signed and sent on every attempt. */
  body: string;
  state: DeliveryState;
  createdAt: Date;
  /** Attempts made so far. */
  attempts: number;
  /** Failures since the delivery was created or redelivered: the position in the retry schedule. */
  retryStep: number;
  nextAttemptAt?: Date;
  lastAttempt?: DeliveryAttempt;
  /** The latest attempts, oldest first (bounded). */
  history: DeliveryAttempt[];
}

/** What one HTTP attempt came to. */
export interface SendResult {
  /** 0 when there was no HTTP answer. */
  statusCode: number;
  durationMs: number;
  error?: string;
  /** Retrying cannot help (the target is refused): the delivery fails now. */
  permanent?: boolean;
}
