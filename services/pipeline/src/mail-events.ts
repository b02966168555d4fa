/**
 * The one publisher of MailEvents (DESIGN §9.1): outcomes from delivery, bounces, complaints
 * and unsubscribes from inbound, on `mail.events.<source>.<type>` with msgID = event id, so
 * a republished event is deduplicated by the stream.
 */
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishTraced } from "@mailroom/kit/jetstream/publish.js";
import { eventSubject } from "./subjects.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { sourceNameOf } from "./delivery-jobs.js";

export type MailEventInit = MessageInitShape<typeof MailEventSchema>;

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
