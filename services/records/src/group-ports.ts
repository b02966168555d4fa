import type { Contact, Group, GroupTraits } from "./model.js";

export type { Group, GroupTraits };

/**
 * What groups (DESIGN §9.4) need from the outside world; adapters/group-store.ts implements it
 * over the store (collections `groups` and `contacts`), unit tests over the in-memory store.
 */

/** A contact document with its memberships (`groups`: group ids; `groupsAddedAt.<groupId>`: when it first joined). */
export type MemberContact = Contact & { groups?: string[]; groupsAddedAt?: Record<string, Date> };

export interface GroupRepository {
  /** False when the workspace has a group with that publicId already. */
  insert(group: Group): Promise<boolean>;
  findById(workspaceId: string, id: string): Promise<Group | null>;
  findByPublicId(workspaceId: string, publicId: string): Promise<Group | null>;
  /** Sets and unsets fields; null when the group is gone. */
  update(workspaceId: string, id: string, set: Partial<Pick<Group, "displayName" | "traits" | "updatedAt">>, unset: Array<"displayName" | "traits">): Promise<Group | null>;
  /** False when there was none. */
  delete(workspaceId: string, id: string): Promise<boolean>;
  /** Id (creation) order after `after` (exclusive). */
  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Group[]>;
  /** The workspace's groups among these ids. */
  findMany(workspaceId: string, ids: string[]): Promise<Group[]>;
}

/** Memberships, kept on the contact documents. */
export interface GroupMembershipRepository {
  /**
   * Adds the contact to the group unless it is a member (its first addedAt stays); answers the
   * membership's addedAt and whether it was added now, or null when the workspace has no such contact.
   */
  add(group: Group, contactId: string, at: Date): Promise<{ addedAt: Date; added: boolean; contact: MemberContact } | null>;
  /** Removes the membership; null when the workspace has no such contact. */
  remove(group: Group, contactId: string, at: Date): Promise<{ removed: boolean; addedAt?: Date; contact: MemberContact } | null>;
  /** The contact's memberships (group id → when it joined), or null when the workspace has no such contact. */
  ofContact(workspaceId: string, contactId: string): Promise<Record<string, Date> | null>;
  /** When the contact joined the group; undefined when it is not a member (or does not exist). */
  addedAt(workspaceId: string, groupId: string, contactId: string): Promise<Date | undefined>;
  /** Takes the group off every contact of the workspace; answers how many were members. */
  removeAll(workspaceId: string, groupId: string): Promise<number>;
  /** The group's members in contact-id order after `after` (exclusive). */
  page(workspaceId: string, groupId: string, opts: { after?: string; limit: number }): Promise<Array<{ contactId: string; addedAt: Date }>>;
}
