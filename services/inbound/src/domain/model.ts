import type { InboundRoute } from "./receiving/model.js";
import type { DeliverySourceName } from "@mailroom/pipeline/work.js";

/** Where a delivery came from (the lanes of the delivery service). */
export type DeliverySource = DeliverySourceName;

/**
 * A delivery the relay accepted, remembered from its SENT event: a bounce or a complaint
 * names only the delivery id; this says whose message it was and to whom.
 */
export interface SentDelivery {
  deliveryId: string;
  workspaceId: string;
  source: DeliverySource;
  emailId: string;
  broadcastId: string;
  messageId: string;
  recipient: string;
  contactId: string;
  groupBy: string;
  sentAt: Date;
  /** The message's cc and bcc envelope recipients (absent on deliveries remembered before they were kept). */
  otherRecipients?: string[];
  /** The email's tags, carried on to the bounce and complaint events. */
  tags?: { name: string; value: string }[];
  /** The delivery route that carried it (DESIGN §9.7; absent on deliveries remembered before routes). */
  route?: string;
}

/** The SMTP envelope of one received message. */
export interface Envelope {
  /** Empty for bounces (the null reverse-path `<>`). */
  mailFrom: string;
  rcptTo: string[];
}

/** What one recipient address of ours stands for. */
export type Mailbox =
  /** `bounces+<token>@…`: the VERP return path of one delivery. */
  | { kind: "return-path"; deliveryId: string }
  /** `unsubscribe+<token>@…`: a List-Unsubscribe mailto carrying the recipient token. */
  | { kind: "unsubscribe"; token: string }
  /** `unsubscribe@…`: the token travels in the subject (`unsubscribe <token>`). */
  | { kind: "unsubscribe-by-subject" }
  /** `fbl@…`, `postmaster@…`: feedback loops and reports sent to a fixed address. */
  | { kind: "reports" }
  /** `SRS0=…@` / `SRS1=…@` (a forward's envelope sender, DESIGN §10.4) whose hash verifies: what bounced a forward. */
  | { kind: "srs"; original: string }
  /** Receiving (DESIGN §10.4): an inbound domain's rule, or the DMARC report mailbox. */
  | { kind: "received"; route: InboundRoute };

/** One recipient's verdict in a delivery status notification. */
export interface BounceVerdict {
  /** RFC 3464 Action: failed, delayed, delivered, relayed, expanded. */
  action: string;
  /** RFC 3463 enhanced status ("5.1.1"), empty when the report gives none. */
  status: string;
  /** A hard bounce: the failure is final and the address is bad (class 5). */
  permanent: boolean;
  /** The remote server's reply code (550), 0 when unknown. */
  smtpCode: number;
  /** The remote server's reply text (Diagnostic-Code), or the status line of a plain bounce. */
  diagnostic: string;
  finalRecipient: string;
  originalRecipient: string;
}

/** What a received message amounts to, before we know whose delivery it concerns. */
export type Finding =
  | { kind: "bounce"; verdict: BounceVerdict }
  /** A DSN that fails nobody (delayed, delivered, relayed): worth a log line, nothing else. */
  | { kind: "no-failure"; action: string; status: string }
  | {
      kind: "complaint";
      /** ARF Feedback-Type: abuse, fraud, virus, other. */
      feedbackType: string;
      userAgent: string;
      /** Of the reported message: our correlation header and its return path, when quoted. */
      deliveryId: string;
      returnPath: string;
      reportedRecipient: string;
    }
  | { kind: "ignored"; reason: string };

/** The event one outcome publishes on the mail event stream. */
export interface InboundEvent {
  /** Derived from what it records, so a redelivered report publishes the same id. */
  eventId: string;
  type: "bounced" | "complained" | "unsubscribed" | "delivered" | "deferred" | "replied";
  workspaceId: string;
  source: DeliverySource;
  deliveryId: string;
  emailId: string;
  broadcastId: string;
  messageId: string;
  recipient: string;
  contactId: string;
  groupBy: string;
  detail: string;
  smtpCode: number;
  permanent: boolean;
  enhancedStatus: string;
  occurredAt: Date;
  tags?: { name: string; value: string }[];
  /** The route that carried the message (its SENT event's), empty when unknown. */
  route?: string;
}

/**
 * What a relay provider reported about one recipient of one message (DESIGN §9.7), read from
 * its event webhook: the message is named by our delivery id (handed back as the provider's
 * metadata, tag or variable) or else by its Message-ID.
 */
export type ProviderReport = {
  provider: string;
  /** Our delivery id, when the provider handed it back; empty otherwise. */
  deliveryId: string;
  /** The message's Message-ID without angle brackets, when the payload carries it; empty otherwise. */
  messageId: string;
  /** The recipient the report is about (a cc or bcc is told apart from the `to`). */
  recipient: string;
  /** When the provider says it happened, when the payload says. */
  occurredAt?: Date;
} & (
  | { kind: "bounce"; permanent: boolean; status: string; smtpCode: number; diagnostic: string }
  | { kind: "complaint"; feedbackType: string; userAgent: string }
  | { kind: "delivered"; smtpCode: number; detail: string }
  /** A temporary failure the provider itself retries: not an outcome of the message yet. */
  | { kind: "deferred"; status: string; smtpCode: number; diagnostic: string }
  /** Understood, but nothing Mailroom records (deferrals, opens, auto-replies …). */
  | { kind: "ignored"; reason: string }
);

export type SuppressionReason = "hard_bounce" | "complaint" | "unsubscribed";
