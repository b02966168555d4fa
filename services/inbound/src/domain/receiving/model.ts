/** Receiving email (DESIGN §10.4): inbound domains, their rules and received messages, in plain TypeScript. */

export type DomainStatus = "pending" | "verified";

export interface InboundDomainRecord {
  /** "ind_…" */
  id: string;
  workspaceId: string;
  /** Lower-case, ASCII (IDNs as punycode), without a trailing dot; unique across workspaces. */
  domain: string;
  status: DomainStatus;
  createdAt: Date;
  verifiedAt?: Date;
  lastCheckedAt?: Date;
  /** Why the last check did not verify it; empty once verified. */
  failure: string;
}

export type RuleAction = "webhook" | "forward" | "store";

export interface InboundRuleRecord {
  /** "inr_…" */
  id: string;
  workspaceId: string;
  domainId: string;
  /** "*", a local part, or "local+*"; lower-case. */
  match: string;
  action: RuleAction;
  /** Only for "forward". */
  forwardTo: string;
  createdAt: Date;
}

export interface ReceivedAddress {
  address: string;
  name: string;
}

export interface ReceivedAttachmentInfo {
  /** "att_<n>", unique within the received email (its position, so a redelivery writes the same ids). */
  id: string;
  filename: string;
  contentType: string;
  size: number;
  contentId: string;
  disposition: "attachment" | "inline";
}

export interface ReplyMatch {
  emailId: string;
  broadcastId: string;
  contactId: string;
}

/** What GetReceivedEmail adds to a listed email; kept inline when small, else in the object store. */
export interface ReceivedDetails {
  text: string;
  html: string;
  strippedTextReply: string;
  headers: { name: string; value: string }[];
}

export interface ReceivedEmailRecord {
  /** "rcv_…", derived from what identifies the message (so a redelivery is the same record). */
  id: string;
  workspaceId: string;
  domainId: string;
  from: ReceivedAddress;
  to: ReceivedAddress[];
  cc: ReceivedAddress[];
  envelopeTo: string[];
  mailFrom: string;
  subject: string;
  messageId: string;
  inReplyToHeader: string;
  references: string[];
  inReplyTo?: ReplyMatch;
  mailboxHash: string;
  receivedAt: Date;
  attachments: ReceivedAttachmentInfo[];
  spamScore?: number;
  size: number;
  ruleId: string;
  action: RuleAction;
  forwardedEmailId: string;
  /** Set once every action ran: a redelivery of the message then does nothing. */
  done: boolean;
  /** The details (bodies, headers) were too large for the record: they are the object `<ws>/<id>/details`. */
  detailsInObject?: boolean;
}

/** Where one RCPT TO address goes. */
export type InboundRoute =
  /** The DMARC aggregate report mailbox (handed to the DMARC port). */
  | { kind: "dmarc"; address: string }
  | {
      kind: "rule";
      address: string;
      workspaceId: string;
      domainId: string;
      ruleId: string;
      action: RuleAction;
      forwardTo: string;
      /** The tag of a plus-address, "" otherwise. */
      mailboxHash: string;
    };

export type RuleRoute = InboundRoute & { kind: "rule" };

export interface ReceivedListQuery {
  to?: string;
  from?: string;
  since?: Date;
  limit: number;
  /** Keyset: strictly older than this (receivedAt, id). */
  after?: { receivedAt: Date; id: string };
}
