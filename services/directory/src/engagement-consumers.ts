import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfKind } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { EngagementEvent } from "@mailroom/filter/filter.js";
import { DeliverySource, MailEventSchema, type MailEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import type { Contact } from "./domain/model.js";
import type { NewEngagement } from "./adapters/engagement-store.js";

/**
 * The MailEvents that make engagement records (`$engagement` in filters), each kind on a
 * durable of its own (one filter subject per consumer, as the outcome durables): the subject's
 * kind → the filter's event name. A new durable starts at the stream's beginning, so what the
 * stream still holds (7 days) is recorded on the first start.
 */
export const ENGAGEMENT_KINDS: Record<string, EngagementEvent> = { sent: "delivered", opened: "opened", clicked: "clicked", bounced: "bounced" };
export const engagementDurable = (kind: string) => `directory-engagement-${kind}`;

export interface EngagementDeps {
  /** The contact an event is about, in its workspace. */
  contacts: { findById(workspaceId: string, id: string): Promise<Contact | null>; findByEmail(workspaceId: string, emailLower: string): Promise<Contact | null> };
  engagement: { record(e: NewEngagement): Promise<boolean> };
}

/** The address of a recipient ("a@b" or "Name <a@b>"), lowercased. */
function addressOf(recipient: string): string {
  const m = /<([^<>]+)>\s*$/.exec(recipient);
  return (m ? m[1] : recipient).trim().toLowerCase();
}

/**
 * The engagement record a MailEvent makes, or undefined: test sends are previews, and an
 * event whose contact is not (or no longer) in the workspace records nothing. The contact is
 * the event's contact id when it carries one (broadcasts), else the workspace's contact with
 * the recipient's address (transactional mail, bounces reported by DSN).
 */
export async function engagementOf(event: MailEvent, kind: EngagementEvent, deps: EngagementDeps): Promise<NewEngagement | undefined> {
  if (!event.workspaceId || event.source === DeliverySource.BROADCAST_TEST) return undefined;
  const contact = event.contactId
    ? await deps.contacts.findById(event.workspaceId, event.contactId)
    : event.recipient ? await deps.contacts.findByEmail(event.workspaceId, addressOf(event.recipient)) : null;
  if (!contact) return undefined;
  const messageId = event.broadcastId || event.emailId || event.messageId || event.deliveryId;
  if (!messageId) return undefined;
  return {
    workspaceId: event.workspaceId,
    contactId: contact._id,
    kind,
    messageId,
    broadcastId: event.broadcastId || undefined,
    at: event.occurredAt ? timestampDate(event.occurredAt) : new Date(),
  };
}

/** Starts one durable consumer per engagement kind; stopping the result stops them all. */
export async function consumeEngagement(nc: NatsConnection, deps: EngagementDeps, logger: Logger): Promise<ConsumeLoop> {
  const loops: ConsumeLoop[] = [];
  try {
    for (const [subjectKind, kind] of Object.entries(ENGAGEMENT_KINDS)) {
      loops.push(
        await consumeProto(
          nc,
          { stream: EVENTS_STREAM, durable: engagementDurable(subjectKind), filterSubjects: [eventsOfKind(subjectKind)], maxDeliver: 20, ackWaitMs: 30_000 },
          MailEventSchema,
          async (event) => {
            const record = await engagementOf(event, kind, deps);
            if (record) await deps.engagement.record(record);
            return ack();
          },
          { logger, concurrency: 64 },
        ),
      );
    }
  } catch (err) {
    await Promise.all(loops.map((l) => l.stop()));
    throw err;
  }
  return {
    get inFlight() {
      return loops.reduce((n, l) => n + l.inFlight, 0);
    },
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}
