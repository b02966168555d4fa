import type { DeliverySourceName } from "@mailroom/pipeline/work.js";
/** Where a job came from; also the middle part of its event subjects. */
export type JobSource = DeliverySourceName;

/** A recipient's merge values (contact properties, template variables) by name. */
export type Variables = Readonly<Record<string, unknown>>;

/** One delivery job as the domain sees it (the protobuf DeliveryJob, decoded and checked). */
export interface Job {
  deliveryId: string;
  workspaceId: string;
  source: JobSource;
  messageId: string;
  emailId: string;
  broadcastId: string;
  recipient: { email: string; contactId: string; variables: Variables };
  fromEmail: string;
  fromName: string;
  replyTo: string;
  /** Every Reply-To address; when not empty it supersedes `replyTo`. */
  replyToList?: readonly string[];
  contentRef: string;
  subjectPrefix: string;
  groupBy: string;
  /** Not to be sent before this time (epoch ms): a page recipient retried after a deferral. */
  notBefore?: number;
  /** The API request that produced the job, passed on to a job handed on. */
  requestId?: string;
  /**
   * DESIGN §9.5: the other envelope recipients (RCPT TO beside `recipient`, one SMTP
   * transaction), bare addresses, suppressed ones left out by the email service. The Cc
   * header comes from the content; bcc addresses are named nowhere in the message.
   */
  cc?: readonly string[];
  bcc?: readonly string[];
  /** The email's tags, on every event of the delivery. */
  tags?: readonly Tag[];
  /** The stored content, when the job carries it (a small transactional email's): not read from the store. */
  content?: Uint8Array;
}

export interface Tag {
  name: string;
  value: string;
}

/**
 * A page job (DESIGN §9.1): a broadcast's recipients in one queue message, each a job of
 * its own (own delivery id, message id, merge values) sharing everything else.
 */
export interface Page {
  pageId: string;
  workspaceId: string;
  broadcastId: string;
  contentRef: string;
  fromEmail: string;
  fromName: string;
  jobs: Job[];
}

// CR, LF, NUL and other C0 controls would let a value break out of its header line.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;
const ADDRESS = /^[^\s@<>()",;:\\[\]]+@[^\s@<>()",;:\\[\]]+$/;
const ID = /^[A-Za-z0-9_.:@+\-]{1,200}$/;

/** Why a job cannot be sent at all, or undefined when it is well formed. */
export function invalidJobReason(job: Job): string | undefined {
  if (!ID.test(job.deliveryId)) return "delivery_id missing or malformed";
  if (!ID.test(job.workspaceId)) return "workspace_id missing or malformed";
  if (!job.messageId || CONTROL.test(job.messageId) || /[<>\s]/.test(job.messageId)) return "message_id missing or malformed";
  if (!ADDRESS.test(job.recipient.email)) return "recipient address is not a valid address";
  if (!ADDRESS.test(job.fromEmail)) return "from_email is not a valid address";
  for (const [name, list] of [["cc", job.cc], ["bcc", job.bcc]] as const) {
    if (list?.some((a) => !ADDRESS.test(a))) return `${name} holds an address that is not valid`;
  }
  for (const [name, value] of [
    ["from_name", job.fromName],
    ["reply_to", job.replyTo],
    ["subject_prefix", job.subjectPrefix],
    ["group_by", job.groupBy],
    ...(job.replyToList ?? []).map((value) => ["reply_to_list", value] as const),
  ] as const) {
    if (CONTROL.test(value)) return `${name} contains control characters`;
  }
  if (!/^(email|broadcast):[A-Za-z0-9_\-]+$/.test(job.contentRef)) return "content_ref must be email:<id> or broadcast:<id>";
  if (job.source === "broadcast" && !job.broadcastId) return "broadcast job without broadcast_id";
  return undefined;
}
