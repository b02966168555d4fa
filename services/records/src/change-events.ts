import { hash, randomUUID } from "node:crypto";
import { contactStatus, type Contact, type ContactProperty, type Group, type Member, type Suppression, type Workspace } from "./model.js";

/** Keys of erased addresses' suppressions start so (the audience unit's suppression list). */
export const ERASED_KEY_PREFIX = "sha256:";

/**
 * The webhook-facing events of the accounts and audience units (DESIGN §9.2), produced where
 * their writes happen: the repositories below wrap the stores, so every path that changes a
 * contact (API, batch, CSV import, console, unsubscribe links, the manage page, bounces and
 * complaints, a send's contactProperties) emits without its caller knowing. An event is
 * built only after its write returned (committed), and its id is derived from what was
 * written (the contact id and the change's version, `updatedAt`), so the same write
 * announced twice is one event: the stream drops it by message id and the webhooks unit
 * stores one delivery per (event, webhook).
 */
export type DirectoryEventType =
  | "CONTACT_CREATED"
  | "CONTACT_UPDATED"
  | "CONTACT_DELETED"
  | "CONTACT_UNSUBSCRIBED"
  | "CONTACT_RESUBSCRIBED"
  | "CONTACT_PROPERTY_UPDATED"
  | "CONTACT_TAG_ADDED"
  | "CONTACT_TAG_REMOVED"
  | "WORKSPACE_TEAM_MEMBER_JOINED"
  | "WORKSPACE_SENDING_EMAILS_PAUSED"
  | "WORKSPACE_BANNED"
  | "SUPPRESSION_CREATED"
  | "SUPPRESSION_DELETED";

/** Exactly the webhook body: `{ id, type, createdAt, workspaceId, data }`. */
export interface DirectoryEvent {
  id: string;
  type: DirectoryEventType;
  createdAt: string;
  workspaceId: string;
  data: Record<string, unknown>;
}

/**
 * Takes events whose writes have committed; must not throw. The write waits for what it
 * returns (the events recorded for publishing), so a write's answer means its events will
 * go out, and a bulk import cannot run ahead of its events' records in memory.
 */
export type DirectoryEventPublisher = (events: DirectoryEvent[], settles?: ChangeIntent) => void | Promise<void>;

/**
 * What a write is about to change, recorded before it: a process killed after the write
 * committed and before its events were recorded leaves the intent behind, and recovery
 * (`eventsOfIntent`, from the intent and what the store holds now) rebuilds exactly the
 * events the write would have announced — the same ids, so a write whose events did go out
 * is announced once. Publishing the events settles (removes) the intent.
 */
export type ChangeIntent = { id: string; at: string; workspaceId: string } & (
  | { kind: "contacts"; reason?: StatusReason; deleting?: boolean; contacts: Array<{ id: string; before: Contact | null }> }
  | { kind: "property"; propertyId: string; version: string }
  | { kind: "member"; member: Member }
  | { kind: "workspace"; before: Workspace }
  // A contact joining (addedAt: the write's time) or leaving (addedAt: when it had joined) a group.
  | { kind: "membership"; contactId: string; group: Group; joining: boolean; addedAt: string }
  // Suppressions about to be added (creating) or removed, each as written or as it stood.
  | { kind: "suppressions"; creating: boolean; suppressions: Suppression[] }
  // A batch of suppressions about to be added (an import's), by key alone (the _id after
  // "<workspaceId>:"): a tenth of the documents' JSON, for batches of thousands.
  | { kind: "suppression_keys"; keys: string[] }
);

/** Records an intent before its write (throws when it cannot: then nothing is written). */
export type ChangeIntentRecorder = (intent: ChangeIntent) => Promise<void>;

export type IntentBody = ChangeIntent extends infer I ? (I extends ChangeIntent ? Omit<I, "id" | "at"> : never) : never;

/** Why a contact's status left or returned to SUBSCRIBED. */
export type StatusReason = "unsubscribed" | "complaint" | "status_changed";

/** A stable event id from the write's identity: the same write always gets the same id. */
export function eventId(type: DirectoryEventType, ...parts: string[]): string {
  // The one-shot hash: an import announces thousands a batch.
  return `dev_${hash("sha256", [type, ...parts].join("\u0000"), "hex").slice(0, 32)}`;
}

export const time = (d: Date | undefined) => String(d ? new Date(d).getTime() : 0);

export function event(type: DirectoryEventType, workspaceId: string, at: Date, idParts: string[], data: Record<string, unknown>): DirectoryEvent {
  return { id: eventId(type, workspaceId, ...idParts), type, createdAt: at.toISOString(), workspaceId, data };
}

/**
 * Runs one write between its intent and its events: the intent is recorded first, the
 * events (built from the write's answer) settle it; a write that changed nothing settles it
 * with none.
 */
export class Announcer {
  constructor(
    private readonly publish: DirectoryEventPublisher,
    private readonly intend: ChangeIntentRecorder | undefined,
    private readonly now: () => Date,
  ) {}

  async around<R>(body: IntentBody, write: () => Promise<R>, eventsOf: (result: R, at: Date) => DirectoryEvent[]): Promise<R> {
    const intent = { ...body, id: randomUUID(), at: this.now().toISOString() } as ChangeIntent;
    if (this.intend) await this.intend(intent);
    // A write that throws may still have committed (an answer lost on the way): its intent
    // stays for the sweep's recovery, which judges from the store.
    const result = await write();
    const events = eventsOf(result, new Date(intent.at));
    if (events.length || this.intend) await this.publish(events, this.intend ? intent : undefined);
    return result;
  }
}

/** The events' payloads: each record as webhooks (and the official client) read it. */

const TEXT_BUILT_INS = ["firstName", "lastName", "avatarUrl", "city", "language", "phone", "birthday", "countryCode", "timezone"] as const;

/** A contact as the official client reads it (what GET /v1/contacts/:id answers; the gateway's contactJson). */
export function clientContact(c: Contact): Record<string, unknown> {
  const builtIns: Record<string, string> = {};
  for (const key of TEXT_BUILT_INS) {
    const value = (c as unknown as Record<string, string | undefined>)[key];
    if (value) builtIns[key] = value;
  }
  return {
    id: c._id,
    createdAt: new Date(c.createdAt).toISOString(),
    ...(c.updatedAt ? { updatedAt: new Date(c.updatedAt).toISOString() } : {}),
    workspaceId: c.workspaceId,
    source: c.source ?? "PUBLIC_API",
    properties: { ...(c.properties ?? {}), email: c.email, ...builtIns, status: contactStatus(c) },
  };
}

/** A property definition as the client reads it (the gateway's propertyJson). */
export function clientProperty(p: ContactProperty): Record<string, unknown> {
  const type = p.type.toUpperCase();
  return {
    id: p.publicId || p.slug,
    apiSlug: p.slug,
    displayName: p.displayName || p.slug,
    ...(p.description ? { description: p.description } : {}),
    type,
    isInternal: false,
    typeConfig: {
      ...(p.options?.length ? { options: p.options } : {}),
      ...(type === "SELECT" || type === "MULTI_SELECT" ? { multiple: type === "MULTI_SELECT" } : {}),
    },
    createdAt: new Date(p.createdAt).toISOString(),
    ...(p.updatedAt ? { updatedAt: new Date(p.updatedAt).toISOString() } : {}),
    workspaceId: p.workspaceId,
  };
}

/** The fields a change touched, by the client's names (properties by slug). */
export function changedFields(before: Contact, after: Contact): string[] {
  const fields = new Set<string>();
  for (const key of [...TEXT_BUILT_INS, "status"] as const) {
    const a = key === "status" ? contactStatus(before) : ((before as unknown as Record<string, unknown>)[key] ?? "");
    const b = key === "status" ? contactStatus(after) : ((after as unknown as Record<string, unknown>)[key] ?? "");
    if (a !== b) fields.add(key);
  }
  const slugs = new Set([...Object.keys(before.properties ?? {}), ...Object.keys(after.properties ?? {})]);
  for (const slug of slugs) {
    if (JSON.stringify(before.properties?.[slug]) !== JSON.stringify(after.properties?.[slug])) fields.add(slug);
  }
  return [...fields];
}

export function createdEvents(c: Contact): DirectoryEvent[] {
  return [event("CONTACT_CREATED", c.workspaceId, new Date(c.createdAt), [c._id, "created"], { contact: clientContact(c) })];
}

/** CONTACT_UPDATED for any change, plus UNSUBSCRIBED / RESUBSCRIBED when the status left / returned to SUBSCRIBED. */
export function updatedEvents(before: Contact, after: Contact, reason: StatusReason = "status_changed"): DirectoryEvent[] {
  const changes = changedFields(before, after);
  if (!changes.length) return [];
  const at = after.updatedAt ? new Date(after.updatedAt) : new Date();
  const version = [after._id, time(after.updatedAt), JSON.stringify(changes)];
  const contact = clientContact(after);
  const events = [event("CONTACT_UPDATED", after.workspaceId, at, version, { contact, changes })];
  const was = contactStatus(before) === "SUBSCRIBED";
  const is = contactStatus(after) === "SUBSCRIBED";
  if (was && !is) events.push(event("CONTACT_UNSUBSCRIBED", after.workspaceId, at, version, { contact, reason }));
  if (!was && is) events.push(event("CONTACT_RESUBSCRIBED", after.workspaceId, at, version, { contact, reason }));
  return events;
}

export function deletedEvents(c: Contact, at: Date): DirectoryEvent[] {
  // A contact id is deleted once (ids are never reused), so the id alone names the deletion.
  return [event("CONTACT_DELETED", c.workspaceId, at, [c._id, "deleted"], { contact: clientContact(c) })];
}

export function propertyEvents(p: ContactProperty): DirectoryEvent[] {
  return [event("CONTACT_PROPERTY_UPDATED", p.workspaceId, new Date(p.updatedAt ?? p.createdAt), [p._id, time(p.updatedAt ?? p.createdAt)], { property: clientProperty(p) })];
}

/**
 * CONTACT_TAG_ADDED: a contact joined a group (the group is the client's "tag"). Its id names
 * the membership (contact, group, when it joined), so one joining is one event.
 */
export function tagAddedEvents(c: Contact, group: Group, addedAt: Date): DirectoryEvent[] {
  const data = { contactId: c._id, groupId: group._id, publicId: group.publicId, contact: clientContact(c), group: clientGroup(group), addedAt: addedAt.toISOString() };
  return [event("CONTACT_TAG_ADDED", c.workspaceId, addedAt, [c._id, group._id, time(addedAt)], data)];
}

/** CONTACT_TAG_REMOVED: a contact left a group; `addedAt` (when it had joined) names the membership that ended. */
export function tagRemovedEvents(c: Contact, group: Group, addedAt: Date | undefined, at: Date): DirectoryEvent[] {
  const data = { contactId: c._id, groupId: group._id, publicId: group.publicId, contact: clientContact(c), group: clientGroup(group), ...(addedAt ? { addedAt: addedAt.toISOString() } : {}), removedAt: at.toISOString() };
  return [event("CONTACT_TAG_REMOVED", c.workspaceId, at, [c._id, group._id, time(addedAt), "removed"], data)];
}

/** A suppression as the public API and webhooks show it: `{ email | domain, reason, createdAt, source? }`. */
export function clientSuppression(s: Suppression): Record<string, unknown> {
  // Built field by field (no spreads): an import's events build thousands a batch.
  const out: Record<string, unknown> = s.domain ? { domain: s.domain } : { email: s.emailLower };
  out.reason = s.reason;
  out.createdAt = new Date(s.createdAt).toISOString();
  if (s.source) out.source = s.source;
  return out;
}

/** A group as the official client reads it (`Group`): what every route answers and the TAG events carry. */
export function clientGroup(g: Group): Record<string, unknown> {
  return {
    id: g._id,
    publicId: g.publicId,
    ...(g.displayName ? { displayName: g.displayName } : {}),
    ...(g.traits ? { traits: g.traits } : {}),
    createdAt: new Date(g.createdAt).toISOString(),
    ...(g.updatedAt ? { updatedAt: new Date(g.updatedAt).toISOString() } : {}),
    workspaceId: g.workspaceId,
  };
}

/**
 * SUPPRESSION_CREATED / SUPPRESSION_DELETED of suppressions a write added or removed. Erased
 * (hashed) entries are never announced: they name no address. Ids come from the entry and its
 * creation time, so announcing (or recovering) one write twice is one event.
 */
export function suppressionEvents(type: "SUPPRESSION_CREATED" | "SUPPRESSION_DELETED", suppressions: Suppression[], at: Date): DirectoryEvent[] {
  // One loop, the write's time formatted once: an import's batch announces thousands.
  const createdAt = at.toISOString();
  const events: DirectoryEvent[] = [];
  for (const s of suppressions) {
    if (s.emailLower.startsWith(ERASED_KEY_PREFIX)) continue;
    const id = eventId(type, s.workspaceId, s.emailLower, String(new Date(s.createdAt).getTime()));
    events.push({ id, type, createdAt, workspaceId: s.workspaceId, data: { suppression: clientSuppression(s) } });
  }
  return events;
}

