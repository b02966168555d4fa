/**
 * Delivery work as plain TypeScript (DESIGN §9.1): what a unit's domain hands the one
 * publisher of delivery jobs (delivery-jobs.ts DeliveryJobPublisher), which alone turns it
 * into the protobuf DeliveryJob / DeliveryPage and publishes it on JetStream. This module
 * knows no wire format nor transport, so a domain may import it (the pure-domain rule of
 * .dependency-cruiser.cjs allows this file, and no other, of services/pipeline).
 */

/** Where a delivery job comes from; also its lane and the <source> token of its events. */
export type DeliverySourceName = "transactional" | "broadcast" | "test";

/** The one recipient of a single delivery job. */
export interface JobRecipientSpec {
  email: string;
  contactId?: string;
  /** Merge values as JSON bytes (see variablesJson); empty or absent for none. */
  variablesJson?: Uint8Array;
}

/** One recipient's delivery job (a transactional email, a test send, a retried page recipient). */
export interface DeliveryJobSpec {
  /** Unique per (message, recipient): the claim key for exactly-once sending and the msgID. */
  deliveryId: string;
  workspaceId: string;
  source: DeliverySourceName;
  /** The RFC 5322 Message-ID, without angle brackets. */
  messageId: string;
  /** trs_… for transactional, cmp_… for broadcasts and tests. */
  emailId?: string;
  broadcastId?: string;
  recipient: JobRecipientSpec;
  fromEmail: string;
  fromName?: string;
  /** Every Reply-To address (`addr` or `Name <addr>`). */
  replyTo?: readonly string[];
  /** The key of the compiled content in the content store, written before the job. */
  contentRef: string;
  /** Prefix of the merged subject (e.g. "[TEST] "). */
  subjectPrefix?: string;
  /** Analytics group (groupBy on transactional emails). */
  groupBy?: string;
  enqueuedAt: Date;
  /** x-request-id of the API request that produced the job. */
  requestId?: string;
  /** Not to be sent before this time (a recipient retried after a deferral). */
  notBefore?: Date;
  /**
   * DESIGN §9.5: the other envelope recipients (RCPT TO beside `recipient`), bare addresses,
   * suppressed ones left out. Bcc recipients are named in no header.
   */
  cc?: readonly string[];
  bcc?: readonly string[];
  /** The email's tags, carried into every event of the message. */
  tags?: readonly JobTag[];
  /** The stored content itself when small (ContentStore.place): then nothing is in the content store. */
  content?: Uint8Array;
}

/** A tag of an email (`[{ name, value }]` in the public API). */
export interface JobTag {
  name: string;
  value: string;
}

/** One recipient of a broadcast's page job. */
export interface PageRecipientSpec {
  /** Unique per (message, recipient), as DeliveryJobSpec.deliveryId. */
  deliveryId: string;
  messageId: string;
  email: string;
  contactId: string;
  /** Merge values as JSON bytes (see variablesJson). */
  variablesJson: Uint8Array;
}

/** A page of a broadcast's recipients; everything but the recipients is shared. */
export interface DeliveryPageSpec {
  /** The page's msgID: the same page re-published is deduplicated. */
  pageId: string;
  workspaceId: string;
  broadcastId: string;
  contentRef: string;
  fromEmail: string;
  fromName?: string;
  /** Every Reply-To address. */
  replyTo?: readonly string[];
  subjectPrefix?: string;
  recipients: readonly PageRecipientSpec[];
  enqueuedAt: Date;
  requestId?: string;
}

const encoder = new TextEncoder();

/** Merge values as the JSON bytes jobs carry (`variables_json`); empty for none. */
export function variablesJson(variables: Readonly<Record<string, unknown>> | undefined): Uint8Array {
  return variables && Object.keys(variables).length > 0 ? encoder.encode(JSON.stringify(variables)) : new Uint8Array(0);
}
