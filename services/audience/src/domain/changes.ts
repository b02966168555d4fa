/** The audience unit's events (DESIGN §9.2): contacts, properties, group memberships, suppressions. */
import { scopedId, type Contact, type ContactProperty, type Group } from "@mailroom/records/model.js";
import type { ContactChange, ContactRepository, ContactWrite, PropertyRepository, SuppressionRepository } from "@mailroom/records/ports.js";
import {
  Announcer, createdEvents, deletedEvents, propertyEvents, suppressionEvents, tagAddedEvents, tagRemovedEvents, time, updatedEvents,
  type ChangeIntent, type ChangeIntentRecorder, type DirectoryEvent, type DirectoryEventPublisher, type StatusReason,
} from "@mailroom/records/change-events.js";
import type { GroupMembershipRepository, MemberContact } from "@mailroom/records/group-ports.js";

export { changedFields, clientContact, clientProperty, createdEvents, deletedEvents, propertyEvents, suppressionEvents, tagAddedEvents, tagRemovedEvents, updatedEvents } from "@mailroom/records/change-events.js";

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
