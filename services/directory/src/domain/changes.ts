import { createHash } from "node:crypto";
import { contactStatus, type Contact, type ContactProperty, type Member, type Workspace } from "./model.js";
import type { ContactChange, ContactRepository, ContactWrite, MemberRepository, PropertyRepository, WorkspaceRepository } from "./ports.js";

/**
 * The directory's webhook-facing events (DESIGN §9.2), produced where the directory's
 * writes happen: the repositories below wrap the stores, so every path that changes a
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
  | "WORKSPACE_TEAM_MEMBER_JOINED"
  | "WORKSPACE_SENDING_EMAILS_PAUSED"
  | "WORKSPACE_BANNED";

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
export type DirectoryEventPublisher = (events: DirectoryEvent[]) => void | Promise<void>;

/** Why a contact's status left or returned to SUBSCRIBED. */
export type StatusReason = "unsubscribed" | "complaint" | "status_changed";

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

/** A stable event id from the write's identity: the same write always gets the same id. */
export function eventId(type: DirectoryEventType, ...parts: string[]): string {
  return `dev_${createHash("sha256").update([type, ...parts].join("\u0000")).digest("hex").slice(0, 32)}`;
}

const time = (d: Date | undefined) => String(d ? new Date(d).getTime() : 0);

function event(type: DirectoryEventType, workspaceId: string, at: Date, idParts: string[], data: Record<string, unknown>): DirectoryEvent {
  return { id: eventId(type, workspaceId, ...idParts), type, createdAt: at.toISOString(), workspaceId, data };
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

export function memberEvents(m: Member): DirectoryEvent[] {
  return [event("WORKSPACE_TEAM_MEMBER_JOINED", m.workspaceId, new Date(m.createdAt), [m._id, time(m.createdAt)], { member: { email: m.email, workspaceId: m.workspaceId, joinedAt: new Date(m.createdAt).toISOString() } })];
}

/** A workspace as its webhooks see it: identity and the operator's state. */
export function clientWorkspace(w: Workspace): Record<string, unknown> {
  const hold = (h: Workspace["banned"]) => (h ? { reason: h.reason || null, at: new Date(h.at).toISOString() } : null);
  return {
    id: w._id,
    name: w.name,
    createdAt: new Date(w.createdAt).toISOString(),
    sendingPaused: Boolean(w.sendingPaused),
    banned: Boolean(w.banned),
    ...(w.sendingPaused ? { sendingPausedReason: hold(w.sendingPaused)!.reason, sendingPausedAt: hold(w.sendingPaused)!.at } : {}),
    ...(w.banned ? { bannedReason: hold(w.banned)!.reason, bannedAt: hold(w.banned)!.at } : {}),
  };
}

/** WORKSPACE_SENDING_EMAILS_PAUSED / WORKSPACE_BANNED when a write turned the pause / the ban on (never when lifted). */
export function workspaceEvents(before: Workspace, after: Workspace): DirectoryEvent[] {
  const events: DirectoryEvent[] = [];
  if (!before.sendingPaused && after.sendingPaused) {
    const at = new Date(after.sendingPaused.at);
    events.push(event("WORKSPACE_SENDING_EMAILS_PAUSED", after._id, at, ["paused", time(at)], { workspace: clientWorkspace(after), reason: after.sendingPaused.reason || null }));
  }
  if (!before.banned && after.banned) {
    const at = new Date(after.banned.at);
    events.push(event("WORKSPACE_BANNED", after._id, at, ["banned", time(at)], { workspace: clientWorkspace(after), reason: after.banned.reason || null }));
  }
  return events;
}

/** The state a change leaves a contact in (what the store's update answers). */
function applied(existing: Contact, change: ContactChange): Contact {
  const properties = { ...existing.properties, ...change.setProperties };
  for (const slug of change.unsetProperties) delete properties[slug];
  return { ...existing, ...change.fields, properties, updatedAt: change.updatedAt };
}

/** The contact store, emitting after each write it made. */
export class EmittingContactRepository implements ContactRepository {
  constructor(
    private readonly inner: ContactRepository,
    private readonly publish: DirectoryEventPublisher,
    private readonly now: () => Date,
  ) {}

  async insert(contact: Contact): Promise<boolean> {
    const ok = await this.inner.insert(contact);
    if (ok) await this.publish(createdEvents(contact));
    return ok;
  }

  findByEmail(workspaceId: string, emailLower: string) {
    return this.inner.findByEmail(workspaceId, emailLower);
  }

  findById(workspaceId: string, id: string) {
    return this.inner.findById(workspaceId, id);
  }

  async update(workspaceId: string, id: string, change: ContactChange, before?: Contact): Promise<Contact | null> {
    const prior = before ?? (await this.inner.findById(workspaceId, id));
    const after = await this.inner.update(workspaceId, id, change);
    if (after && prior) await this.publish(updatedEvents(prior, after));
    return after;
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    const prior = await this.inner.findById(workspaceId, id);
    await this.inner.delete(workspaceId, id);
    if (prior) await this.publish(deletedEvents(prior, this.now()));
  }

  page(...args: Parameters<ContactRepository["page"]>) {
    return this.inner.page(...args);
  }

  count(...args: Parameters<ContactRepository["count"]>) {
    return this.inner.count(...args);
  }

  async unsubscribe(workspaceId: string, emailLower: string, at: Date, reason: StatusReason = "unsubscribed", asOf?: Date): Promise<Contact | null> {
    const prior = await this.inner.findByEmail(workspaceId, emailLower);
    const after = await this.inner.unsubscribe(workspaceId, emailLower, at, undefined, asOf);
    if (after && prior) await this.publish(updatedEvents(prior, after, reason));
    return after;
  }

  findManyByEmail(workspaceId: string, emailsLower: string[]) {
    return this.inner.findManyByEmail(workspaceId, emailsLower);
  }

  async upsertMany(workspaceId: string, writes: ContactWrite[]): Promise<boolean> {
    const updates = writes.filter((w): w is Extract<ContactWrite, { id: string }> => "id" in w);
    const priors = new Map<string, Contact>();
    for (const w of updates) {
      const prior = w.before ?? (await this.inner.findById(workspaceId, w.id));
      if (prior) priors.set(w.id, prior);
    }
    const ok = await this.inner.upsertMany(workspaceId, writes);
    // When the plan did not hold, only the writes the store shows as made are announced.
    const landed = ok ? undefined : new Map((await this.inner.findManyByEmail(workspaceId, writes.map((w) => ("insert" in w ? w.insert.emailLower : (priors.get(w.id)?.emailLower ?? ""))).filter(Boolean))).map((c) => [c._id, c]));
    const events: DirectoryEvent[] = [];
    for (const w of writes) {
      if ("insert" in w) {
        if (!landed || landed.has(w.insert._id)) events.push(...createdEvents(w.insert));
        continue;
      }
      const prior = priors.get(w.id);
      if (!prior) continue;
      const stored = landed?.get(w.id);
      if (landed && (!stored || time(stored.updatedAt) !== time(w.change.updatedAt))) continue;
      events.push(...updatedEvents(prior, stored ?? applied(prior, w.change)));
    }
    if (events.length) await this.publish(events);
    return ok;
  }
}

export class EmittingPropertyRepository implements PropertyRepository {
  constructor(private readonly inner: PropertyRepository, private readonly publish: DirectoryEventPublisher) {}

  async insert(property: ContactProperty): Promise<boolean> {
    const ok = await this.inner.insert(property);
    if (ok) await this.publish(propertyEvents(property));
    return ok;
  }

  async update(...args: Parameters<PropertyRepository["update"]>): Promise<ContactProperty | null> {
    const after = await this.inner.update(...args);
    if (after) await this.publish(propertyEvents(after));
    return after;
  }

  find(id: string) {
    return this.inner.find(id);
  }

  findByPublicId(workspaceId: string, publicId: string) {
    return this.inner.findByPublicId(workspaceId, publicId);
  }

  list(workspaceId: string, limit: number) {
    return this.inner.list(workspaceId, limit);
  }
}

export class EmittingMemberRepository implements MemberRepository {
  constructor(private readonly inner: MemberRepository, private readonly publish: DirectoryEventPublisher) {}

  async ensure(member: Member): Promise<void> {
    const known = (await this.inner.list(member.workspaceId, 10_000)).some((m) => m._id === member._id);
    await this.inner.ensure(member);
    if (!known) await this.publish(memberEvents(member));
  }

  remove(id: string) {
    return this.inner.remove(id);
  }

  list(workspaceId: string, limit: number) {
    return this.inner.list(workspaceId, limit);
  }
}

export class EmittingWorkspaceRepository implements WorkspaceRepository {
  constructor(private readonly inner: WorkspaceRepository, private readonly publish: DirectoryEventPublisher) {}

  insert(workspace: Workspace) {
    return this.inner.insert(workspace);
  }

  find(id: string) {
    return this.inner.find(id);
  }

  async update(id: string, changes: Partial<Omit<Workspace, "_id">>): Promise<Workspace | null> {
    const watched = "sendingPaused" in changes || "banned" in changes;
    const prior = watched ? await this.inner.find(id) : null;
    const after = await this.inner.update(id, changes);
    if (after && prior) {
      const events = workspaceEvents(prior, after);
      if (events.length) await this.publish(events);
    }
    return after;
  }

  list(limit: number) {
    return this.inner.list(limit);
  }
}
