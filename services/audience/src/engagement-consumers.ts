import type { NatsConnection } from "@nats-io/transport-node";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { ack, consumeProto, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { EVENTS_STREAM, eventsOfKind } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { EngagementEvent } from "@mailroom/filter/filter.js";
import { DeliverySource, MailEventSchema, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import type { Contact } from "@mailroom/records/model.js";
import type { NewEngagement } from "./adapters/engagement-store.js";

/**
 * The MailEvents that make engagement records (`$engagement` in filters), each kind on a
 * durable of its own (one filter subject per consumer, as the outcome durables): the subject's
 * kind → the filter's event name. A new durable starts at the stream's beginning, so what the
 * stream still holds (7 days) is recorded on the first start.
 */
export const ENGAGEMENT_KINDS: Record<string, EngagementEvent> = { sent: "delivered", opened: "opened", clicked: "clicked", bounced: "bounced" };
export const engagementDurable = (kind: string) => `directory-engagement-${kind}`;
/** Events per batch write (and pulled ahead per kind). */
const BATCH = 500;

export interface EngagementDeps {
  /** The workspace's contacts among these ids, and those with these addresses. */
  contacts: {
    existingIds(workspaceId: string, ids: readonly string[]): Promise<Set<string>>;
    findManyByEmail(workspaceId: string, emailsLower: string[]): Promise<Contact[]>;
  };
  engagement: { recordMany(e: readonly NewEngagement[]): Promise<boolean[]> };
}

/** The address of a recipient ("a@b" or "Name <a@b>"), lowercased. */
function addressOf(recipient: string): string {
  const m = /<([^<>]+)>\s*$/.exec(recipient);
  return (m ? m[1] : recipient).trim().toLowerCase();
}

/**
 * The engagement records MailEvents make, by position (undefined for none): test sends are
 * previews, and an event whose contact is not (or no longer) in the workspace records nothing.
 * The contact is the event's contact id when it carries one (broadcasts), else the workspace's
 * contact with the recipient's address (transactional mail, bounces reported by DSN). The
 * contacts of a batch are looked up together, one read per workspace and kind of key.
 */
export async function engagementsOf(events: readonly MailEvent[], kind: EngagementEvent, deps: EngagementDeps): Promise<(NewEngagement | undefined)[]> {
  const byWorkspace = new Map<string, { ids: string[]; emails: string[] }>();
  const counted = (e: MailEvent) => !!e.workspaceId && e.source !== DeliverySource.BROADCAST_TEST && !!(e.broadcastId || e.emailId || e.messageId || e.deliveryId);
  for (const e of events) {
    if (!counted(e)) continue;
    const w = byWorkspace.get(e.workspaceId) ?? { ids: [], emails: [] };
    if (e.contactId) w.ids.push(e.contactId);
    else if (e.recipient) w.emails.push(addressOf(e.recipient));
    byWorkspace.set(e.workspaceId, w);
  }
  const found = new Map<string, { ids: Set<string>; byEmail: Map<string, string> }>();
  await Promise.all(
    [...byWorkspace].map(async ([workspaceId, w]) => {
      const [ids, contacts] = await Promise.all([
        deps.contacts.existingIds(workspaceId, w.ids),
        w.emails.length ? deps.contacts.findManyByEmail(workspaceId, [...new Set(w.emails)]) : Promise.resolve([]),
      ]);
      found.set(workspaceId, { ids, byEmail: new Map(contacts.map((c) => [c.emailLower, c._id])) });
    }),
  );
  return events.map((event) => {
    if (!counted(event)) return undefined;
    const f = found.get(event.workspaceId)!;
    const contactId = event.contactId ? (f.ids.has(event.contactId) ? event.contactId : undefined) : event.recipient ? f.byEmail.get(addressOf(event.recipient)) : undefined;
    if (!contactId) return undefined;
    return {
      workspaceId: event.workspaceId,
      contactId,
      kind,
      messageId: event.broadcastId || event.emailId || event.messageId || event.deliveryId,
      broadcastId: event.broadcastId || undefined,
      at: event.occurredAt ? timestampDate(event.occurredAt) : new Date(),
    };
  });
}

/** The records of a batch of events, written together. */
async function recordBatch(events: MailEvent[], kind: EngagementEvent, deps: EngagementDeps): Promise<void[]> {
  const records = await engagementsOf(events, kind, deps);
  await deps.engagement.recordMany(records.filter((r): r is NewEngagement => r !== undefined));
  return events.map(() => undefined);
}

/** Starts one durable consumer per engagement kind; stopping the result stops them all. */
export async function consumeEngagement(nc: NatsConnection, deps: EngagementDeps, logger: Logger): Promise<ConsumeLoop> {
  const loops: ConsumeLoop[] = [];
  // The events of a kind that arrive while its last batch is written go out as the next one.
  const batches = new Coalescer<MailEvent, void>((k, events) => recordBatch(events, k as EngagementEvent, deps), BATCH);
  try {
    for (const [subjectKind, kind] of Object.entries(ENGAGEMENT_KINDS)) {
      loops.push(
        await consumeProto(
          nc,
          { stream: EVENTS_STREAM, durable: engagementDurable(subjectKind), filterSubjects: [eventsOfKind(subjectKind)], maxDeliver: 20, ackWaitMs: 30_000 },
          MailEventSchema,
          async (event) => {
            await batches.run(kind, event);
            return ack();
          },
          // Events in hand at once: the batch a write takes while the last one is written.
          { logger, concurrency: BATCH },
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
