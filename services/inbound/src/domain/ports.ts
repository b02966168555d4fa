import type { InboundEvent, SentDelivery, SuppressionReason } from "./model.js";
import type { InboundDomainRecord, InboundRuleRecord, ReceivedDetails, ReceivedEmailRecord, ReceivedListQuery } from "./receiving/model.js";

/**
 * Everything the inbound domain needs from the outside world; ../adapters/ implements it.
 * A failing port makes the whole message fail temporarily (SMTP 451), so the sending MTA
 * tries again later: suppressions are idempotent and events carry derived ids.
 */

/** Deliveries the relay accepted, remembered from their SENT events for a while. */
export interface SentDeliveries {
  remember(delivery: SentDelivery): Promise<void>;
  find(deliveryId: string): Promise<SentDelivery | null>;
  /** The delivery whose message had this Message-ID (without angle brackets). */
  findByMessageId(messageId: string): Promise<SentDelivery | null>;
}

/** The audience unit: the suppression list and contacts. */
export interface Suppressions {
  /** Idempotent; a stronger reason replaces a weaker one (the audience unit decides). */
  suppress(workspaceId: string, email: string, reason: SuppressionReason, detail: string): Promise<void>;
  /** Marks the contact (when there is one) unsubscribed, as the unsubscribe page does. */
  markUnsubscribed(workspaceId: string, email: string): Promise<void>;
}

/** The mail event stream (MAIL_EVENTS). */
export interface MailEvents {
  publish(event: InboundEvent): Promise<void>;
}

/** kit's one clock. */
export type { Clock } from "@mailroom/kit/clock.js";

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

// --- receiving email (DESIGN §10.4) -------------------------------------------------------

/** Inbound domains (unique per domain across every workspace) and their rules. */
export interface InboundDomainStore {
  /** Throws AppError 409 `inbound_domain_taken` when the domain is another workspace's (or this one's). */
  insert(domain: InboundDomainRecord): Promise<void>;
  find(workspaceId: string, id: string): Promise<InboundDomainRecord | null>;
  findByName(domain: string): Promise<InboundDomainRecord | null>;
  list(workspaceId: string): Promise<InboundDomainRecord[]>;
  /** Every workspace's: the routing cache's source. */
  all(): Promise<InboundDomainRecord[]>;
  update(domain: InboundDomainRecord): Promise<void>;
  /** Deletes the domain and its rules; false when it is not the workspace's. */
  delete(workspaceId: string, id: string): Promise<boolean>;
}

export interface InboundRuleStore {
  /** Throws AppError 409 `inbound_rule_exists` when the domain has a rule with this match. */
  insert(rule: InboundRuleRecord): Promise<void>;
  list(workspaceId: string, domainId: string): Promise<InboundRuleRecord[]>;
  all(): Promise<InboundRuleRecord[]>;
  delete(workspaceId: string, domainId: string, id: string): Promise<boolean>;
}

export interface ReceivedEmailStore {
  find(workspaceId: string, id: string): Promise<ReceivedEmailRecord | null>;
  /** Inserts or replaces (a redelivery of a message not fully handled the first time keeps its receivedAt). */
  save(email: ReceivedEmailRecord, details: ReceivedDetails | null): Promise<void>;
  /** Every action ran (forwardedEmailId: the forward's email, "" when none). */
  markDone(workspaceId: string, id: string, forwardedEmailId: string): Promise<void>;
  details(workspaceId: string, id: string): Promise<ReceivedDetails | null>;
  list(workspaceId: string, query: ReceivedListQuery): Promise<ReceivedEmailRecord[]>;
}

/** Bytes of received messages: the raw message, each attachment, large details (JetStream's object store). */
export interface ReceivedContents {
  put(name: string, data: Uint8Array): Promise<void>;
  /** The object's bytes in chunks; null when it is not (or no longer) there. */
  get(name: string): Promise<AsyncIterable<Uint8Array> | null>;
}

/** MX records of a domain (real DNS). */
export interface MxLookup {
  /** Exchange host names (lower-case, no trailing dot); [] when the domain has none. Throws on a lookup failure. */
  mx(domain: string): Promise<string[]>;
}

/** WebhookEvents (WEBHOOK_EVENTS): EMAIL_RECEIVED. */
export interface WebhookEvents {
  publish(spec: { eventId: string; type: string; workspaceId: string; occurredAt: Date; data: Record<string, unknown> }): Promise<void>;
}

/**
 * A forward through the send path (SRS-rewritten envelope sender): the email service sends
 * `raw` to `to`. `receivedId` lets the adapter make a retried forward one email. A refusal
 * that a retry would meet again is thrown as an AppError with a 4xx status (the message is then
 * kept, not forwarded); any other error fails the receipt temporarily (451, the MTA retries).
 */
export interface Forwarder {
  forward(input: { workspaceId: string; receivedId: string; to: string; mailFrom: string; raw: Uint8Array }): Promise<{ emailId: string }>;
}

/**
 * DMARC aggregate reports mailed to the inbound unit (the DMARC code's port). A message to an
 * address `isReportMailbox` claims is handed over whole, before any inbound rule is looked at;
 * `receive` should throw only for a temporary failure (the sending MTA retries then).
 */
export interface DmarcReports {
  isReportMailbox(address: string): boolean;
  receive(raw: Uint8Array, parsed: unknown): Promise<void>;
}

/** SpamAssassin's score of a message; undefined when it did not run (absent, busy, failed). */
export interface SpamScorer {
  score(raw: Uint8Array): Promise<number | undefined>;
}

/**
 * The workspace's verified sending domains (the accounts unit's): an inbound domain is claimed
 * only by a workspace that proved it controls the domain, or a parent of it, by its DKIM
 * record. An MX record naming our host proves the domain sends mail here, not to whom.
 */
export interface SendingDomains {
  /** Whether `domain` or one of its parent domains is a verified sending domain of the workspace. */
  verifiedFor(workspaceId: string, domain: string): Promise<boolean>;
}
