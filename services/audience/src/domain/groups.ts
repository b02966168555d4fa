import { badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { checkListLimit } from "./contacts.js";
import type { Page } from "@mailroom/records/model.js";
import type { Group, GroupMembershipRepository, GroupRepository, GroupTraits } from "@mailroom/records/group-ports.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

/**
 * Groups (DESIGN §9.4, the official client's `groups` module): named sets of contacts, unique
 * per workspace by `publicId` (the caller's own id for the group, e.g. a company's id). A
 * contact's memberships live on the contact (`groups`, `groupsAddedAt.<groupId>`), so a
 * group's contacts are one index range (workspaceId, groups, _id). Wherever a group id is
 * expected its publicId is accepted too: the id first, then the publicId.
 */

/** Letters, digits and `_ . : @ + = -`, starting with a letter, digit or `_` (it travels unencoded in paths). */
const PUBLIC_ID = /^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]*$/;
export const PUBLIC_ID_MAX = 200;
export const DISPLAY_NAME_MAX = 200;
/** Traits: a JSON object of at most 16 KB (UTF-8), nested at most 5 levels. */
export const TRAITS_MAX_BYTES = 16 * 1024;
const TRAITS_MAX_DEPTH = 5;
const GROUP_ID = /^grp_[0-9a-z]{26}$/;
const CONTACT_CURSOR = /^ctc_[0-9a-z]{26}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
export const GROUPS_DEFAULT_LIMIT = 50;
export const GROUPS_MAX_LIMIT = 100;

export interface GroupInput {
  publicId: unknown;
  displayName?: unknown;
  traits?: unknown;
}

export interface GroupChanges {
  /** undefined: unchanged; "" or null: removed. */
  displayName?: unknown;
  /** undefined: unchanged; null: removed; an object: replaces them. */
  traits?: unknown;
}

export interface Membership {
  groupId: string;
  contactId: string;
  addedAt: Date;
  /** False when the contact was a member already (addedAt is the first one). */
  added: boolean;
}

export interface GroupMemberItem {
  contactId: string;
  addedAt: Date;
}

export function checkPublicId(raw: unknown): string {
  if (typeof raw !== "string" || !raw) throw badRequest("invalid_group", "publicId is required (a string)");
  if (raw.length > PUBLIC_ID_MAX || !PUBLIC_ID.test(raw)) {
    throw badRequest("invalid_group", `publicId ${JSON.stringify(raw.slice(0, 60))} must be 1-${PUBLIC_ID_MAX} letters, digits or _ . : @ + = - (starting with a letter, digit or _)`);
  }
  return raw;
}

/** undefined / "" / null: none. */
export function checkDisplayName(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== "string") throw badRequest("invalid_group", "displayName must be a string");
  const name = raw.trim();
  if (name.length > DISPLAY_NAME_MAX || CONTROL.test(name)) throw badRequest("invalid_group", `displayName must be at most ${DISPLAY_NAME_MAX} characters without control characters`);
  return name || undefined;
}

function checkTraitKeys(value: unknown, path: string, depth: number): void {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) checkTraitKeys(item, `${path}[${i}]`, depth + 1);
    return;
  }
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw badRequest("invalid_group", `${path} must be a finite number`);
    return;
  }
  if (depth > TRAITS_MAX_DEPTH) throw badRequest("invalid_group", `traits may nest at most ${TRAITS_MAX_DEPTH} levels (${path})`);
  for (const [key, item] of Object.entries(value)) {
    // Stored as document fields: a key MongoDB would read as an operator or a path is refused.
    if (!key || key.startsWith("$") || key.includes(".") || CONTROL.test(key) || key.length > 200) {
      throw badRequest("invalid_group", `${path}: the key ${JSON.stringify(key.slice(0, 60))} must be 1-200 characters without "$" at its start, "." or control characters`);
    }
    checkTraitKeys(item, `${path}.${key}`, depth + 1);
  }
}

/** undefined / null: none; otherwise a JSON object of bounded size. */
export function checkTraits(raw: unknown): GroupTraits | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== "object" || Array.isArray(raw)) throw badRequest("invalid_group", "traits must be a JSON object");
  const bytes = Buffer.byteLength(JSON.stringify(raw));
  if (bytes > TRAITS_MAX_BYTES) throw badRequest("invalid_group", `traits exceed ${TRAITS_MAX_BYTES / 1024} KB of JSON (${bytes} bytes)`);
  checkTraitKeys(raw, "traits", 1);
  return raw as GroupTraits;
}


export class Groups {
  constructor(
    private readonly repo: GroupRepository,
    private readonly members: GroupMembershipRepository,
    private readonly workspaces: WorkspaceLookup,
    private readonly now: Clock = systemClock,
  ) {}

  async create(workspaceId: string, input: GroupInput): Promise<Group> {
    requireWorkspaceId(workspaceId);
    const publicId = checkPublicId(input?.publicId);
    const displayName = checkDisplayName(input.displayName);
    const traits = checkTraits(input.traits);
    await this.workspaces.get(workspaceId);
    const group: Group = {
      _id: newId("grp"), workspaceId, publicId,
      ...(displayName ? { displayName } : {}),
      ...(traits ? { traits } : {}),
      createdAt: this.now(),
    };
    if (!(await this.repo.insert(group))) throw conflict("group_public_id_taken", `A group with publicId "${publicId}" already exists`);
    return group;
  }

  /** By id, or by publicId when no group has that id. */
  async get(workspaceId: string, idOrPublicId: string): Promise<Group> {
    requireWorkspaceId(workspaceId);
    const found = await this.find(workspaceId, idOrPublicId);
    if (!found) throw notFound("group_not_found", `Group ${JSON.stringify(String(idOrPublicId).slice(0, 200))} not found`);
    return found;
  }

  /** The group's id for an id or publicId, or undefined (the filter language's groupIdOf). */
  async find(workspaceId: string, idOrPublicId: string): Promise<Group | null> {
    if (typeof idOrPublicId !== "string" || !idOrPublicId || idOrPublicId.length > PUBLIC_ID_MAX) return null;
    if (GROUP_ID.test(idOrPublicId)) {
      const byId = await this.repo.findById(workspaceId, idOrPublicId);
      if (byId) return byId;
    }
    return this.repo.findByPublicId(workspaceId, idOrPublicId);
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Group>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, GROUPS_MAX_LIMIT, GROUPS_DEFAULT_LIMIT);
    if (opts.cursor && !GROUP_ID.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  async update(workspaceId: string, idOrPublicId: string, changes: GroupChanges): Promise<Group> {
    const group = await this.get(workspaceId, idOrPublicId);
    const set: Partial<Group> = {};
    const unset: Array<"displayName" | "traits"> = [];
    if (changes.displayName !== undefined) {
      const name = checkDisplayName(changes.displayName);
      if (name) set.displayName = name;
      else unset.push("displayName");
    }
    if (changes.traits !== undefined) {
      const traits = checkTraits(changes.traits);
      if (traits) set.traits = traits;
      else unset.push("traits");
    }
    set.updatedAt = this.now();
    const updated = await this.repo.update(workspaceId, group._id, set, unset);
    if (!updated) throw notFound("group_not_found", `Group ${idOrPublicId} not found`);
    return updated;
  }

  /** Deletes the group, then takes it off every contact (no CONTACT_TAG_REMOVED: the group is gone, not left). */
  async delete(workspaceId: string, idOrPublicId: string): Promise<{ group: Group; contactsRemoved: number }> {
    const group = await this.get(workspaceId, idOrPublicId);
    await this.repo.delete(workspaceId, group._id);
    const contactsRemoved = await this.members.removeAll(workspaceId, group._id);
    return { group, contactsRemoved };
  }

  async addContact(workspaceId: string, idOrPublicId: string, contactId: unknown): Promise<Membership> {
    const id = checkContactId(contactId);
    const group = await this.get(workspaceId, idOrPublicId);
    const result = await this.members.add(group, id, this.now());
    if (!result) throw notFound("contact_not_found", `Contact ${id} not found`);
    // A delete of the group that ran between the read and the add has pulled its members
    // already: take this late one off too, so no contact keeps a deleted group.
    if (result.added && !(await this.repo.findById(workspaceId, group._id))) {
      await this.members.removeAll(workspaceId, group._id);
      throw notFound("group_not_found", `Group ${JSON.stringify(String(idOrPublicId).slice(0, 200))} not found`);
    }
    return { groupId: group._id, contactId: id, addedAt: result.addedAt, added: result.added };
  }

  async removeContact(workspaceId: string, idOrPublicId: string, contactId: unknown): Promise<{ groupId: string; contactId: string; removed: boolean }> {
    const id = checkContactId(contactId);
    const group = await this.get(workspaceId, idOrPublicId);
    const result = await this.members.remove(group, id, this.now());
    if (!result) throw notFound("contact_not_found", `Contact ${id} not found`);
    return { groupId: group._id, contactId: id, removed: result.removed };
  }

  /** The groups one contact is in, in the order it joined them (a contact's data export). */
  async ofContact(workspaceId: string, contactId: unknown): Promise<ContactGroupItem[]> {
    requireWorkspaceId(workspaceId);
    const id = checkContactId(contactId);
    const memberships = await this.members.ofContact(workspaceId, id);
    if (!memberships) throw notFound("contact_not_found", `Contact ${id} not found`);
    const groups = await this.repo.findMany(workspaceId, Object.keys(memberships));
    return groups
      .map((group) => ({ group, addedAt: memberships[group._id] }))
      .sort((a, b) => a.addedAt.getTime() - b.addedAt.getTime() || (a.group._id < b.group._id ? -1 : 1));
  }

  /** The group's contacts in contact-id order. */
  async listContacts(workspaceId: string, idOrPublicId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<GroupMemberItem>> {
    const limit = checkListLimit(opts.limit, GROUPS_MAX_LIMIT, GROUPS_DEFAULT_LIMIT);
    if (opts.cursor && !CONTACT_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const group = await this.get(workspaceId, idOrPublicId);
    const docs = await this.members.page(workspaceId, group._id, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1].contactId : "" };
  }
}

export interface ContactGroupItem {
  group: Group;
  addedAt: Date;
}

function checkContactId(raw: unknown): string {
  if (typeof raw !== "string" || !raw) throw badRequest("invalid_request", "contactId is required (a string)");
  if (raw.length > 100 || CONTROL.test(raw)) throw badRequest("invalid_request", "contactId is not a contact id");
  return raw;
}
