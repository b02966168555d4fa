import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { MailEventSchema, MailEventType, DeliverySource, type MailEvent } from "../../gen/mailroom/events/v1/events_pb.js";
import { publishProto } from "../../services/kit/src/jetstream.js";
import type { TrackingEvents } from "./deps.js";

const SOURCE = { [DeliverySource.TRANSACTIONAL]: "transactional", [DeliverySource.BROADCAST]: "broadcast", [DeliverySource.BROADCAST_TEST]: "test" } as Record<number, string>;

/** Subject of a MailEvent: mail.events.<source>.<type>. */
export function eventSubject(event: MailEvent): string {
  const source = SOURCE[event.source] ?? "unknown";
  const type = MailEventType[event.type]?.toLowerCase() ?? "unspecified";
  return `mail.events.${source}.${type}`;
}

export function natsTrackingEvents(nc: NatsConnection): TrackingEvents {
  const js = jetstream(nc);
  return {
    publish: (event) => publishProto(js, eventSubject(event), MailEventSchema, event, event.eventId),
  };
}
