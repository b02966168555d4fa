/** The audience unit's events (DESIGN §9.2): contacts, properties, group memberships, suppressions. */
import { contactStatus, scopedId, type Contact, type ContactProperty, type Group, type Suppression } from "@mailroom/records/model.js";
import type { ContactChange, ContactRepository, ContactWrite, PropertyRepository, SuppressionRepository } from "@mailroom/records/ports.js";
import { Announcer, event, eventId, time, type ChangeIntent, type ChangeIntentRecorder, type DirectoryEvent, type DirectoryEventPublisher, type StatusReason } from "@mailroom/records/change-events.js";
import { clientSuppression, ERASED_KEY_PREFIX } from "./suppression.js";
import type { GroupMembershipRepository, MemberContact } from "./group-ports.js";
import { clientGroup } from "./groups.js";

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

/** The state a change leaves a contact in (what the store's update answers). */
function applied(existing: Contact, change: ContactChange): Contact {
  const properties = { ...existing.properties, ...change.setProperties };
  for (const slug of change.unsetProperties) delete properties[slug];
  return { ...existing, ...change.fields, properties, updatedAt: change.updatedAt };
}

/** What the store holds now, for recovering an intent (the repositories without emission). */
export interface IntentState {
  contacts: Pick<ContactRepository, "findById">;
  properties: Pick<PropertyRepository, "find">;
  suppressions: Pick<SuppressionRepository, "findMany">;
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

/** The events an intent's write announced, judged from what the store holds now (none when it did not land). */
export async function eventsOfIntent(intent: ChangeIntent, state: IntentState): Promise<DirectoryEvent[]> {
  switch (intent.kind) {
    case "contacts": {
      const events: DirectoryEvent[] = [];
      for (const { id, before } of intent.contacts) {
        const now = await state.contacts.findById(intent.workspaceId, id);
        if (!before) {
          if (now) events.push(...createdEvents(now));
        } else if (intent.deleting) {
          if (!now) events.push(...deletedEvents(before, new Date(intent.at)));
        } else if (now && time(now.updatedAt) !== time(before.updatedAt)) {
          events.push(...updatedEvents(before, now, intent.reason));
        }
      }
      return events;
    }
    case "property": {
      const now = await state.properties.find(intent.propertyId);
      return now && time(now.updatedAt ?? now.createdAt) !== intent.version ? propertyEvents(now) : [];
    }
    case "member":
    case "workspace":
      return [];
    case "suppressions": {
      // Landed: an added one is stored with the write's own creation time; a removed one is gone
      // (or is another suppression since, created later).
      const byKey = new Map(intent.suppressions.map((s) => [s._id, s]));
      const now = new Map((await state.suppressions.findMany(intent.workspaceId, [...byKey.keys()])).map((s) => [s._id, s]));
      const landed = intent.suppressions.filter((s) => {
        const stored = now.get(s._id);
        const same = stored !== undefined && time(new Date(stored.createdAt)) === time(new Date(s.createdAt));
        return intent.creating ? same : !same;
      });
      return suppressionEvents(intent.creating ? "SUPPRESSION_CREATED" : "SUPPRESSION_DELETED", landed, new Date(intent.at));
    }
    case "suppression_keys": {
      // Each one stored now is announced with its stored creation time: the id its creation
      // was (or would have been) announced with, so one another writer added meanwhile, and
      // announced itself, is still one event.
      const ids = intent.keys.map((key) => scopedId(intent.workspaceId, key));
      return suppressionEvents("SUPPRESSION_CREATED", await state.suppressions.findMany(intent.workspaceId, ids), new Date(intent.at));
    }
    case "membership": {
      const now = (await state.contacts.findById(intent.workspaceId, intent.contactId)) as MemberContact | null;
      if (!now) return [];
      const held = now.groupsAddedAt?.[intent.group._id];
      const same = held !== undefined && time(new Date(held)) === time(new Date(intent.addedAt));
      // Joining landed: the membership holds the write's time. Leaving landed: that membership is gone.
      if (intent.joining) return same ? tagAddedEvents(now, intent.group, new Date(intent.addedAt)) : [];
      return same ? [] : tagRemovedEvents(now, intent.group, new Date(intent.addedAt), new Date(intent.at));
    }
  }
}

/** The contact store, emitting after each write it made. */
export class EmittingContactStore implements ContactRepository {
  private readonly announcer: Announcer;

  constructor(
    private readonly inner: ContactRepository,
    publish: DirectoryEventPublisher,
    private readonly now: () => Date,
    intend?: ChangeIntentRecorder,
  ) {
    this.announcer = new Announcer(publish, intend, now);
  }

  insert(contact: Contact): Promise<boolean> {
    return this.announcer.around(
      { kind: "contacts", workspaceId: contact.workspaceId, contacts: [{ id: contact._id, before: null }] },
      () => this.inner.insert(contact),
      (ok) => (ok ? createdEvents(contact) : []),
    );
  }

  findByEmail(workspaceId: string, emailLower: string) {
    return this.inner.findByEmail(workspaceId, emailLower);
  }

  findById(workspaceId: string, id: string) {
    return this.inner.findById(workspaceId, id);
  }

  async update(workspaceId: string, id: string, change: ContactChange, before?: Contact): Promise<Contact | null> {
    const prior = before ?? (await this.inner.findById(workspaceId, id));
    if (!prior) return this.inner.update(workspaceId, id, change);
    return this.announcer.around(
      { kind: "contacts", workspaceId, contacts: [{ id, before: prior }] },
      () => this.inner.update(workspaceId, id, change),
      (after) => (after ? updatedEvents(prior, after) : []),
    );
  }

  async delete(workspaceId: string, id: string): Promise<void> {
    const prior = await this.inner.findById(workspaceId, id);
    if (!prior) return this.inner.delete(workspaceId, id);
    return this.announcer.around(
      { kind: "contacts", workspaceId, deleting: true, contacts: [{ id, before: prior }] },
      () => this.inner.delete(workspaceId, id),
      (_, at) => deletedEvents(prior, at),
    );
  }

  page(...args: Parameters<ContactRepository["page"]>) {
    return this.inner.page(...args);
  }

  count(...args: Parameters<ContactRepository["count"]>) {
    return this.inner.count(...args);
  }

  async unsubscribe(workspaceId: string, emailLower: string, at: Date, reason: StatusReason = "unsubscribed", asOf?: Date): Promise<Contact | null> {
    const prior = await this.inner.findByEmail(workspaceId, emailLower);
    if (!prior) return this.inner.unsubscribe(workspaceId, emailLower, at, undefined, asOf);
    return this.announcer.around(
      { kind: "contacts", workspaceId, reason, contacts: [{ id: prior._id, before: prior }] },
      () => this.inner.unsubscribe(workspaceId, emailLower, at, undefined, asOf),
      (after) => (after ? updatedEvents(prior, after, reason) : []),
    );
  }

  findManyByEmail(workspaceId: string, emailsLower: string[]) {
    return this.inner.findManyByEmail(workspaceId, emailsLower);
  }

  existingIds(workspaceId: string, ids: readonly string[]) {
    return this.inner.existingIds(workspaceId, ids);
  }

  async upsertMany(workspaceId: string, writes: ContactWrite[]): Promise<boolean> {
    const updates = writes.filter((w): w is Extract<ContactWrite, { id: string }> => "id" in w);
    const priors = new Map<string, Contact>();
    for (const w of updates) {
      const prior = w.before ?? (await this.inner.findById(workspaceId, w.id));
      if (prior) priors.set(w.id, prior);
    }
    const contacts = writes.map((w) => ("insert" in w ? { id: w.insert._id, before: null } : { id: w.id, before: priors.get(w.id) ?? null })).filter((c, i) => "insert" in writes[i]! || c.before);
    let landed: Map<string, Contact> | undefined;
    return this.announcer.around(
      { kind: "contacts", workspaceId, contacts },
      async () => {
        const ok = await this.inner.upsertMany(workspaceId, writes);
        // When the plan did not hold, only the writes the store shows as made are announced.
        landed = ok ? undefined : new Map((await this.inner.findManyByEmail(workspaceId, writes.map((w) => ("insert" in w ? w.insert.emailLower : (priors.get(w.id)?.emailLower ?? ""))).filter(Boolean))).map((c) => [c._id, c]));
        return ok;
      },
      () => this.batchEvents(writes, priors, landed),
    );
  }

  private batchEvents(writes: ContactWrite[], priors: Map<string, Contact>, landed: Map<string, Contact> | undefined): DirectoryEvent[] {
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
    return events;
  }
}

export class EmittingPropertyStore implements PropertyRepository {
  private readonly announcer: Announcer;

  constructor(private readonly inner: PropertyRepository, publish: DirectoryEventPublisher, intend?: ChangeIntentRecorder, now: () => Date = () => new Date()) {
    this.announcer = new Announcer(publish, intend, now);
  }

  insert(property: ContactProperty): Promise<boolean> {
    return this.announcer.around(
      { kind: "property", workspaceId: property.workspaceId, propertyId: property._id, version: "absent" },
      () => this.inner.insert(property),
      (ok) => (ok ? propertyEvents(property) : []),
    );
  }

  async update(...args: Parameters<PropertyRepository["update"]>): Promise<ContactProperty | null> {
    const prior = await this.inner.find(args[0]);
    if (!prior) return this.inner.update(...args);
    return this.announcer.around(
      { kind: "property", workspaceId: prior.workspaceId, propertyId: prior._id, version: time(prior.updatedAt ?? prior.createdAt) },
      () => this.inner.update(...args),
      (after) => (after ? propertyEvents(after) : []),
    );
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

/** Group memberships, emitting CONTACT_TAG_ADDED / CONTACT_TAG_REMOVED after each join and leave. */
export class EmittingGroupMembershipStore implements GroupMembershipRepository {
  private readonly announcer: Announcer;

  constructor(private readonly inner: GroupMembershipRepository, publish: DirectoryEventPublisher, intend?: ChangeIntentRecorder, now: () => Date = () => new Date()) {
    this.announcer = new Announcer(publish, intend, now);
  }

  add(group: Group, contactId: string, at: Date) {
    return this.announcer.around(
      { kind: "membership", workspaceId: group.workspaceId, contactId, group, joining: true, addedAt: at.toISOString() },
      () => this.inner.add(group, contactId, at),
      (result) => (result?.added ? tagAddedEvents(result.contact, group, result.addedAt) : []),
    );
  }

  async remove(group: Group, contactId: string, at: Date) {
    // The membership about to end, named by when it began (not a member: nothing to announce).
    const joined = await this.inner.addedAt(group.workspaceId, group._id, contactId);
    if (!joined) return this.inner.remove(group, contactId, at);
    return this.announcer.around(
      { kind: "membership", workspaceId: group.workspaceId, contactId, group, joining: false, addedAt: joined.toISOString() },
      () => this.inner.remove(group, contactId, at),
      (result, when) => (result?.removed ? tagRemovedEvents(result.contact, group, result.addedAt ?? joined, when) : []),
    );
  }

  ofContact(...args: Parameters<GroupMembershipRepository["ofContact"]>) {
    return this.inner.ofContact(...args);
  }

  addedAt(...args: Parameters<GroupMembershipRepository["addedAt"]>) {
    return this.inner.addedAt(...args);
  }

  removeAll(workspaceId: string, groupId: string) {
    return this.inner.removeAll(workspaceId, groupId);
  }

  page(...args: Parameters<GroupMembershipRepository["page"]>) {
    return this.inner.page(...args);
  }
}
