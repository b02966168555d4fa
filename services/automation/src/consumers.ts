/**
 * The automation unit's JetStream consumers (transport only: decode, hand to the domain,
 * settle): the audience unit's changes on DIRECTORY_EVENTS (contact created, updated, joined
 * a group; unsubscribed, deleted), contact events (POST /v1/events) and the opens, clicks, suppressions and hard
 * bounces of MAIL_EVENTS. Durable pull consumers with explicit acks and bounded deliveries; a handler
 * that fails is delivered again after a backoff (nak with delay, kit's consume), and the
 * domain makes a redelivery harmless (run ids derive from event ids).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ack, consume, drop, type ConsumeLoop, type ConsumerSpec } from "@mailroom/kit/jetstream.js";
import type { Logger } from "@mailroom/kit/logger.js";
import {
  CONTACT_EVENTS_STREAM,
  CONTACT_EVENTS_SUBJECTS,
  DIRECTORY_EVENTS_STREAM,
  DIRECTORY_EVENTS_SUBJECTS,
  EVENTS_STREAM,
  eventsOfKind,
} from "@mailroom/pipeline/subjects.js";
import { directoryEventsIn } from "@mailroom/pipeline/directory-events.js";
import { ContactEventSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import type { Enrolment, EventContact } from "./domain/enrol.js";

export const DIRECTORY_DURABLE = "automation-directory";
export const CONTACT_EVENTS_DURABLE = "automation-contact-events";
export const MAIL_DURABLES = {
  opened: "automation-mail-opened",
  clicked: "automation-mail-clicked",
  suppressed: "automation-mail-suppressed",
  bounced: "automation-mail-bounced",
  replied: "automation-mail-replied",
} as const;

export interface ConsumerOptions {
  /** Messages handled at once per consumer (enrolments of one round share their contact reads). */
  concurrency: number;
}

/** A DIRECTORY_EVENTS event as published by the audience and accounts units (the webhook body). */
interface DirectoryEvent {
  id: string;
  type: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

export function directoryEventOf(bytes: Uint8Array): DirectoryEvent | undefined {
  const events = directoryEventsIn(bytes);
  return events?.length === 1 ? eventOf(events[0]) : undefined;
}

/** The events of a message: one, or a batch of one write's (pipeline/directory-events.ts); undefined when none. */
export function directoryEventsOf(bytes: Uint8Array): DirectoryEvent[] | undefined {
  const events = directoryEventsIn(bytes)?.map(eventOf).filter((e): e is DirectoryEvent => e !== undefined);
  return events?.length ? events : undefined;
}

function eventOf(value: unknown): DirectoryEvent | undefined {
  const e = value as Partial<DirectoryEvent> | null;
  if (typeof e?.id !== "string" || typeof e.type !== "string" || typeof e.workspaceId !== "string" || !e.data || typeof e.data !== "object") return undefined;
  return e as DirectoryEvent;
}

/** The contact of a directory event, in the client's shape (`{ id, properties: { email, status } }`). */
function contactOf(data: Record<string, unknown>): (EventContact & { id: string }) | undefined {
  const c = data.contact as { id?: unknown; properties?: Record<string, unknown> } | undefined;
  const email = c?.properties?.email;
  if (!c || typeof c.id !== "string" || typeof email !== "string") return undefined;
  const status = c.properties?.status;
  return { id: c.id, email, status: typeof status === "string" ? status : undefined };
}

/** What one directory event does to runs. */
export async function handleDirectoryEvent(enrolment: Enrolment, e: DirectoryEvent): Promise<void> {
  const contact = contactOf(e.data);
  const base = { eventId: e.id, workspaceId: e.workspaceId };
  switch (e.type) {
    case "CONTACT_CREATED":
      if (contact) await enrolment.trigger({ ...base, type: "contact_created", contact, matches: () => true });
      return;
    case "CONTACT_UPDATED": {
      const changes = Array.isArray(e.data.changes) ? (e.data.changes as unknown[]).filter((c): c is string => typeof c === "string") : [];
      if (contact && changes.length) {
        await enrolment.trigger({ ...base, type: "property_changed", contact, matches: (t) => t.type === "property_changed" && changes.includes(t.property) });
      }
      return;
    }
    case "CONTACT_TAG_ADDED": {
      const groupId = e.data.groupId;
      const publicId = e.data.publicId;
      if (contact) {
        await enrolment.trigger({ ...base, type: "group_joined", contact, matches: (t) => t.type === "group_joined" && (t.groupId === groupId || (Boolean(publicId) && t.groupId === publicId)) });
      }
      return;
    }
    case "CONTACT_UNSUBSCRIBED":
      if (contact) await enrolment.exitContact(e.workspaceId, contact.id, "unsubscribed");
      return;
    case "CONTACT_DELETED":
      if (contact) await enrolment.exitContact(e.workspaceId, contact.id, "deleted");
      return;
  }
}

/** What one open, click or suppression does to runs. */
export async function handleMailEvent(enrolment: Enrolment, event: MailEvent): Promise<void> {
  if (!event.workspaceId) return;
  if (event.type === MailEventType.SUPPRESSED) {
    if (event.emailId) await enrolment.emailSuppressed(event.workspaceId, event.emailId);
    return;
  }
  if (event.type === MailEventType.BOUNCED) {
    // A hard bounce puts the address on the suppression list (the contact's status stays):
    // its runs end now, not at their next send.
    if (event.permanent && event.recipient) await enrolment.addressSuppressed(event.workspaceId, event.recipient, event.contactId || undefined);
    return;
  }
  if (event.type === MailEventType.REPLIED) {
    // DESIGN §10.4: a reply resumes the run that sent the email if it waits for one (a
    // wait_for_event on email_replied); replies enrol nobody (no email_replied trigger).
    if (event.emailId) await enrolment.emailEvent(event.workspaceId, event.emailId, "email_replied");
    return;
  }
  const kind = event.type === MailEventType.OPENED ? "email_opened" : event.type === MailEventType.CLICKED ? "email_clicked" : undefined;
  if (!kind) return;
  if (event.emailId) await enrolment.emailEvent(event.workspaceId, event.emailId, kind);
  if (!event.recipient) return;
  await enrolment.trigger({
    eventId: event.eventId,
    workspaceId: event.workspaceId,
    type: kind,
    contact: { id: event.contactId || undefined, email: event.recipient },
    matches: async (t) => {
      if (t.type !== kind) return false;
      if (t.broadcastId && t.broadcastId !== event.broadcastId) return false;
      if (t.template) return Boolean(event.emailId) && (await enrolment.templateOf(event.workspaceId, event.emailId)) === t.template;
      return true;
    },
  });
}

/**
 * A durable created now starts at the stream's end: events from before the unit existed
 * enrol nobody. One that exists keeps its position.
 */
async function fromNow(nc: NatsConnection, spec: ConsumerSpec): Promise<ConsumerSpec> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    return spec;
  } catch {
    const info = await jsm.streams.info(spec.stream);
    return { ...spec, startSeq: info.state.last_seq + 1 };
  }
}

const COMMON = { maxDeliver: 20, ackWaitMs: 30_000 };

export async function startConsumers(nc: NatsConnection, enrolment: Enrolment, logger: Logger, opts: ConsumerOptions): Promise<ConsumeLoop[]> {
  const loops: ConsumeLoop[] = [];
  loops.push(
    await consume(
      nc,
      await fromNow(nc, { stream: DIRECTORY_EVENTS_STREAM, durable: DIRECTORY_DURABLE, filterSubjects: [DIRECTORY_EVENTS_SUBJECTS], ...COMMON }),
      directoryEventsOf,
      async (events) => {
        if (!events) return drop("not a directory event");
        for (const event of events) await handleDirectoryEvent(enrolment, event);
        return ack();
      },
      { logger, concurrency: opts.concurrency, idOf: (es) => (es ? (es.length === 1 ? es[0].id : `${es[0].id}+${es.length - 1}`) : "") },
    ),
  );
  loops.push(
    await consume(
      nc,
      await fromNow(nc, { stream: CONTACT_EVENTS_STREAM, durable: CONTACT_EVENTS_DURABLE, filterSubjects: [CONTACT_EVENTS_SUBJECTS], ...COMMON }),
      (bytes) => fromBinary(ContactEventSchema, bytes),
      async (event) => {
        if (!event.workspaceId || !event.contactId || !event.name) return drop("contact event without workspace, contact or name");
        await enrolment.customEvent(event.workspaceId, event.contactId, event.name, event.receivedAt ? timestampDate(event.receivedAt) : undefined);
        await enrolment.trigger({
          eventId: event.id || event.messageId,
          workspaceId: event.workspaceId,
          type: "event",
          contact: { id: event.contactId, email: event.email },
          matches: (t) => t.type === "event" && t.name === event.name,
        });
        return ack();
      },
      { logger, concurrency: opts.concurrency, idOf: (e) => e.id },
    ),
  );
  for (const kind of ["opened", "clicked", "suppressed", "bounced", "replied"] as const) {
    loops.push(
      await consume(
        nc,
        await fromNow(nc, { stream: EVENTS_STREAM, durable: MAIL_DURABLES[kind], filterSubjects: [eventsOfKind(kind)], ...COMMON }),
        (bytes) => fromBinary(MailEventSchema, bytes),
        async (event) => {
          await handleMailEvent(enrolment, event);
          return ack();
        },
        { logger, concurrency: Math.min(64, opts.concurrency), idOf: (e) => e.eventId },
      ),
    );
  }
  return loops;
}
