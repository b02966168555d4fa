import { toBinary } from "@bufbuild/protobuf";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { MailEventSchema, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { mailEventSubject } from "@mailroom/pipeline/mail-events.js";
import type { TrackingEvents } from "@mailroom/http/deps.js";

/** Subject of a MailEvent: mail.events.<source>.<type>, by the pipeline's one rule. */
export const eventSubject = (event: MailEvent): string => mailEventSubject(event);

/**
 * Tracking events go out as plain NATS publishes on the MAIL_EVENTS subjects (the stream
 * stores them; `Nats-Msg-Id` still deduplicates reloads): no JetStream ack is requested,
 * so an open or a click costs one buffered write and no round trip. The client buffers
 * across reconnects; an event published while the stream itself is gone is lost, which is
 * the price of answering recipients without waiting on storage (tracking is best effort).
 */
export function natsTrackingEvents(nc: NatsConnection): TrackingEvents {
  // Events of one turn of the event loop go out together: the NATS client then writes them
  // to its socket in one write instead of one per click.
  let batch: MailEvent[] = [];
  let flushed: Promise<void> | undefined;
  const flush = () => {
    const events = batch;
    batch = [];
    flushed = undefined;
    for (const event of events) {
      let subject: string;
      try {
        subject = eventSubject(event);
      } catch {
        continue; // no source or type a subject can name: no consumer would read it
      }
      const h = headers();
      h.set("Nats-Msg-Id", event.eventId);
      nc.publish(subject, toBinary(MailEventSchema, event), { headers: h });
    }
  };
  return {
    publish: (event) => {
      batch.push(event);
      flushed ??= new Promise<void>((resolve, reject) => setImmediate(() => {
        try {
          flush();
          resolve();
        } catch (err) {
          reject(err);
        }
      }));
      return flushed;
    },
  };
}
