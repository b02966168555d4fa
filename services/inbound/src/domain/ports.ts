import type { InboundEvent, SentDelivery, SuppressionReason } from "./model.js";

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

/** The directory: the suppression list and contacts. */
export interface Suppressions {
  /** Idempotent; a stronger reason replaces a weaker one (the directory decides). */
  suppress(workspaceId: string, email: string, reason: SuppressionReason, detail: string): Promise<void>;
  /** Marks the contact (when there is one) unsubscribed, as the unsubscribe page does. */
  markUnsubscribed(workspaceId: string, email: string): Promise<void>;
}

/** The mail event stream (MAIL_EVENTS). */
export interface MailEvents {
  publish(event: InboundEvent): Promise<void>;
}

export interface Clock {
  now(): Date;
}

export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
