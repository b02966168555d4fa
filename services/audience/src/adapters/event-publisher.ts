import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ContactEventSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { publishProto } from "@mailroom/kit/jetstream.js";
import { contactEventSubject } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { ContactEvent } from "@mailroom/records/model.js";
import type { ContactEventPublisher } from "@mailroom/records/ports.js";

/**
 * Announces accepted contact events on CONTACT_EVENTS (contact.events.<name>), deduplicated
 * by the stream on (workspace, messageId). The audience unit's contact_events collection is the
 * record; the announcement is best effort: it waits for NATS without holding up the request,
 * and a failure is logged.
 */
export function natsContactEventPublisher(connection: Promise<NatsConnection>, logger: Logger): ContactEventPublisher {
  const js = connection.then((nc) => jetstream(nc));
  return (event: ContactEvent) => {
    const message = create(ContactEventSchema, {
      id: event._id,
      workspaceId: event.workspaceId,
      contactId: event.contactId,
      email: event.email,
      name: event.name,
      properties: event.properties as JsonObject,
      timestamp: timestampFromDate(event.timestamp),
      messageId: event.messageId,
      receivedAt: timestampFromDate(event.receivedAt),
    });
    void js
      .then((client) => publishProto(client, contactEventSubject(event.name), ContactEventSchema, message, `contact-event:${event.workspaceId}:${event.messageId}`))
      .catch((err) => logger.warn({ err, workspaceId: event.workspaceId, messageId: event.messageId }, "contact event not announced"));
  };
}
