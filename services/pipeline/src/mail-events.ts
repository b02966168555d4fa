/**
 * The one publisher of MailEvents (DESIGN §9.1): outcomes from delivery, bounces, complaints
 * and unsubscribes from inbound, on `mail.events.<source>.<type>` with msgID = event id, so
 * a republished event is deduplicated by the stream.
 */
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishTraced } from "@mailroom/kit/jetstream/publish.js";
import { eventSubject } from "./subjects.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { deliverySourceOf, sourceNameOf } from "./delivery-source.js";
import type { DeliverySourceName } from "./work.js";

export type MailEventInit = MessageInitShape<typeof MailEventSchema>;

const TYPE = {
  sent: MailEventType.SENT,
  deferred: MailEventType.DEFERRED,
  bounced: MailEventType.BOUNCED,
  failed: MailEventType.FAILED,
  complained: MailEventType.COMPLAINED,
  unsubscribed: MailEventType.UNSUBSCRIBED,
  delivered: MailEventType.DELIVERED,
  replied: MailEventType.REPLIED,
} as const;

/** The mail event kinds delivery and inbound publish, by name. */
export type MailEventTypeName = keyof typeof TYPE;

/** A MailEvent in the units' wire-free terms; absent text is empty and absent numbers 0 on the wire. */
export interface MailEventSpec {
  /** Derived from what it records, so a republished event is deduplicated (msgID). */
  eventId: string;
  type: MailEventTypeName;
  workspaceId: string;
  source: DeliverySourceName;
  deliveryId: string;
  emailId?: string;
  broadcastId?: string;
  messageId?: string;
  recipient: string;
  contactId?: string;
  groupBy?: string;
  detail?: string;
  smtpCode?: number;
  attempt?: number;
  /** A bounce's failure is final (readers count it a hard bounce, the audience unit suppresses). */
  permanent?: boolean;
  enhancedStatus?: string;
  tags?: readonly { name: string; value: string }[];
  /** The message's cc and bcc envelope recipients. */
  otherRecipients?: readonly string[];
  route?: string;
  occurredAt: Date;
}

/** The one builder of a MailEvent's fields (delivery's outcomes, inbound's reports). */
export function mailEventOf(e: MailEventSpec): MailEvent {
  return create(MailEventSchema, {
    eventId: e.eventId,
    type: TYPE[e.type],
    workspaceId: e.workspaceId,
    source: deliverySourceOf(e.source),
    deliveryId: e.deliveryId,
    emailId: e.emailId ?? "",
    broadcastId: e.broadcastId ?? "",
    messageId: e.messageId ?? "",
    recipient: e.recipient,
    contactId: e.contactId ?? "",
    groupBy: e.groupBy ?? "",
    detail: e.detail ?? "",
    smtpCode: e.smtpCode ?? 0,
    attempt: e.attempt ?? 0,
    permanent: e.permanent ?? false,
    enhancedStatus: e.enhancedStatus ?? "",
    tags: e.tags?.map((t) => ({ name: t.name, value: t.value })) ?? [],
    otherRecipients: [...(e.otherRecipients ?? [])],
    route: e.route ?? "",
    occurredAt: timestampFromDate(e.occurredAt),
  });
}

/** mail.events.<source>.<type>, e.g. mail.events.broadcast.sent. */
export function mailEventSubject(event: Pick<MailEvent, "source" | "type">): string {
  const type = MailEventType[event.type];
  if (!type || event.type === MailEventType.UNSPECIFIED) throw new Error(`mail event type ${event.type} has no subject`);
  return eventSubject(sourceNameOf(event.source), type.toLowerCase());
}

export class MailEventPublisher {
  constructor(private readonly js: JetStreamClient) {}

  /** Resolves once the stream stored the event. */
  async publish(init: MailEventInit): Promise<void> {
    const event = create(MailEventSchema, init);
    if (!event.eventId) throw new Error("a mail event needs event_id");
    await publishTraced(this.js, mailEventSubject(event), toBinary(MailEventSchema, event), { msgID: event.eventId });
  }
}
