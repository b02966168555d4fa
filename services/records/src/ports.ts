import type {
  ApiKey, Contact, ContactEvent, ContactProperty, ContactStatus, ExtraBuiltIn, TemplateStatus, TemplateKind, TemplateVersion, Member, PropertyValue, SenderDomain, SenderEmail, Suppression, SuppressionReason, Template,
  UsageCounter, Workspace,
} from "./model.js";

/**
 * What the accounts and audience units' use cases need from the outside world. The store adapters
 * (adapters/*-store.ts) implement the repositories; adapters/dns.ts the resolver and key
 * generator. "insert" answers false when a unique key is already taken.
 */

export interface WorkspaceRepository {
  insert(workspace: Workspace): Promise<boolean>;
  find(id: string): Promise<Workspace | null>;
  update(id: string, changes: Partial<Omit<Workspace, "_id">>): Promise<Workspace | null>;
  list(limit: number): Promise<Workspace[]>;
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<boolean>;
  findByHash(hash: string): Promise<ApiKey | null>;
  find(workspaceId: string, keyId: string): Promise<ApiKey | null>;
  list(workspaceId: string, limit: number): Promise<ApiKey[]>;
  /** Keys by creation time from `startAt` (inclusive) in the given direction. */
  page(workspaceId: string, opts: { startAt?: Date; limit: number; newestFirst: boolean }): Promise<ApiKey[]>;
  setScopes(keyId: string, scopes: string[]): Promise<void>;
  update(workspaceId: string, keyId: string, changes: Partial<Pick<ApiKey, "name" | "scopes" | "updatedAt">>): Promise<ApiKey | null>;
  /** Sets revokedAt unless the key is revoked already. */
  revoke(workspaceId: string, keyId: string, at: Date): Promise<void>;
  /** Records a use; an earlier `at` than the one stored changes nothing. */
  touchLastUsed(keyId: string, at: Date): Promise<void>;
}

export interface SenderRepository {
  /** Inserts the address unless it exists (concurrent callers both succeed). */
  ensureEmail(email: SenderEmail): Promise<void>;
  /** Marks an unverified address verified at `at`; a verified one keeps its date. */
  markEmailVerified(id: string, at: Date): Promise<void>;
  findEmail(id: string): Promise<SenderEmail | null>;
  listEmails(workspaceId: string, opts: { verifiedOnly?: boolean; limit: number }): Promise<SenderEmail[]>;
  insertDomain(domain: SenderDomain): Promise<boolean>;
  findDomain(workspaceId: string, id: string): Promise<SenderDomain | null>;
  updateDomain(id: string, changes: Partial<Omit<SenderDomain, "_id" | "workspaceId">>): Promise<SenderDomain | null>;
  listDomains(workspaceId: string, opts: { verifiedOnly?: boolean; limit: number }): Promise<SenderDomain[]>;
}

export interface MemberRepository {
  /** Inserts the member unless it exists. */
  ensure(member: Member): Promise<void>;
  remove(id: string): Promise<void>;
  list(workspaceId: string, limit: number): Promise<Member[]>;
  /** By public id ("mbr_…"). */
  findByPublicId(workspaceId: string, publicId: string): Promise<Member | null>;
}

export interface PropertyRepository {
  insert(property: ContactProperty): Promise<boolean>;
  find(id: string): Promise<ContactProperty | null>;
  findByPublicId(workspaceId: string, publicId: string): Promise<ContactProperty | null>;
  update(id: string, changes: Partial<Pick<ContactProperty, "displayName" | "description" | "updatedAt">>): Promise<ContactProperty | null>;
  list(workspaceId: string, limit: number): Promise<ContactProperty[]>;
}

/** The fields of one contact update: only what differs from the stored contact. */
export interface ContactChange {
  fields: Partial<Pick<Contact, "firstName" | "lastName" | "timezone" | "status" | ExtraBuiltIn>>;
  setProperties: Record<string, PropertyValue>;
  unsetProperties: string[];
  updatedAt: Date;
}

export interface ContactRepository {
  /** False when the workspace has a contact with that email already. */
  insert(contact: Contact): Promise<boolean>;
  findByEmail(workspaceId: string, emailLower: string): Promise<Contact | null>;
  findById(workspaceId: string, id: string): Promise<Contact | null>;
  /** `before`: the contact as the caller read it (spares a read to the change events). */
  update(workspaceId: string, id: string, change: ContactChange, before?: Contact): Promise<Contact | null>;
  delete(workspaceId: string, id: string): Promise<void>;
  /** Contacts in id order (creation order) after `after` (exclusive). */
  page(workspaceId: string, opts: ContactQuery & { after?: string; limit: number; newestFirst?: boolean }): Promise<Contact[]>;
  count(workspaceId: string, query?: ContactQuery): Promise<number>;
  /**
   * Marks the workspace's contact with that address UNSUBSCRIBED, if it is SUBSCRIBED; answers
   * the contact so changed, else null. `reason` goes to CONTACT_UNSUBSCRIBED. With `asOf`, only
   * if its status did not change after that moment (a late unsubscribe never undoes a newer choice).
   */
  unsubscribe(workspaceId: string, emailLower: string, at: Date, reason?: "unsubscribed" | "complaint", asOf?: Date): Promise<Contact | null>;
  /** The workspace's contacts with these addresses (one read for a whole batch). */
  findManyByEmail(workspaceId: string, emailsLower: string[]): Promise<Contact[]>;
  /** Which of these ids are the workspace's contacts. */
  existingIds(workspaceId: string, ids: readonly string[]): Promise<Set<string>>;
  /**
   * Applies a batch's planned writes in order, in one store transaction: inserts of new
   * contacts and changes to existing ones (by id). Answers false when the store no longer
   * matched the plan (a concurrent writer inserted one of the addresses, or deleted a
   * contact); then only some of the writes may have been made.
   */
  upsertMany(workspaceId: string, writes: ContactWrite[]): Promise<boolean>;
}

/** One planned write of a batch upsert. */
export type ContactWrite = { insert: Contact } | { id: string; change: ContactChange; before?: Contact };

export interface ContactQuery {
  status?: ContactStatus;
  /** Case-insensitive substring of the email, first or last name. */
  search?: string;
  /** A compiled filter (DESIGN §9.4, adapters/contact-filter.ts): a store condition the contacts must also match. */
  filter?: Record<string, unknown>;
}

export interface ContactEventRepository {
  /** False when the workspace has an event with that messageId already. */
  insert(event: ContactEvent): Promise<boolean>;
  findByMessageId(workspaceId: string, messageId: string): Promise<ContactEvent | null>;
  /** Newest first; `after` is the id of the last event of the previous page. */
  page(workspaceId: string, contactId: string, opts: { after?: string; limit: number }): Promise<ContactEvent[]>;
  /**
   * Erasure: deletes the contact's events and any other event of the workspace recorded for
   * its address (an earlier contact of the same address); answers how many went.
   */
  deleteForContact(workspaceId: string, contactId: string, emailLower: string): Promise<number>;
}

/** Announces an accepted contact event (the event stream); best effort, never throws. */
export type ContactEventPublisher = (event: ContactEvent) => void;

export interface SuppressionRepository {
  /** Inserts the suppression unless its key is suppressed already; true when it inserted. */
  ensure(suppression: Suppression): Promise<boolean>;
  /** `ensure` for a batch (an import) whose keys were found missing just before: answers the ones it inserted. */
  ensureMany(suppressions: Suppression[]): Promise<Suppression[]>;
  /** Replaces a weak reason (unsubscribed, manual, imported) by a stronger one; a strong reason stays. */
  strengthen(id: string, reason: SuppressionReason, detail: string): Promise<void>;
  /** Records what caused it when nothing did yet (the first writer may not have known). */
  setSourceIfMissing(id: string, source: string): Promise<void>;
  find(id: string): Promise<Suppression | null>;
  findMany(workspaceId: string, ids: string[]): Promise<Suppression[]>;
  /** Whether the workspace has any erased (hashed) suppression: an import looks up hashes only then. */
  hasErased(workspaceId: string): Promise<boolean>;
  /**
   * Removes the suppression and answers it (null when nothing was removed); with `reason`,
   * only when it has that reason; with `unless`, only when it has not. `quiet`: no event
   * (an erasure replacing the address by its hash).
   */
  remove(id: string, reason?: SuppressionReason, opts?: { unless?: SuppressionReason; quiet?: boolean }): Promise<Suppression | null>;
  /** Listed ones (never erased, hashed keys) in key order after `after`. */
  page(workspaceId: string, opts: SuppressionPageQuery): Promise<Suppression[]>;
}

export interface SuppressionPageQuery {
  /** The last _id of the previous page. */
  after?: string;
  limit: number;
  reason?: SuppressionReason;
  /** Created at or after. */
  since?: Date;
  /** Keys starting with this (lower-cased) text. */
  prefix?: string;
}

export interface TemplateRepository {
  /** False when the workspace has a template of that name already. */
  insert(template: Template): Promise<boolean>;
  findByName(workspaceId: string, name: string): Promise<Template | null>;
  findById(workspaceId: string, id: string): Promise<Template | null>;
  update(workspaceId: string, id: string, changes: Partial<Omit<Template, "_id" | "workspaceId" | "name" | "createdAt">>): Promise<Template | null>;
  /** Deletes the template and its saved versions. */
  delete(workspaceId: string, id: string): Promise<void>;
  /** The workspace's templates that name this one as their layout or render it as a snippet, by name. */
  usersOf(workspaceId: string, name: string): Promise<Template[]>;
  page(workspaceId: string, opts: { after?: string; limit: number; status?: TemplateStatus; newestFirst?: boolean; kind?: TemplateKind }): Promise<Template[]>;
  /** Keeps a saved version (idempotent per template and version). */
  addVersion(version: TemplateVersion): Promise<void>;
  /** A template's saved versions, newest first. */
  versions(workspaceId: string, templateId: string, limit: number): Promise<TemplateVersion[]>;
  findVersion(workspaceId: string, templateId: string, version: number): Promise<TemplateVersion | null>;
}

export interface UsageRepository {
  /** Creates the month's counter at zero unless it exists. */
  ensure(counter: UsageCounter): Promise<void>;
  find(id: string): Promise<UsageCounter | null>;
  /**
   * Compare-and-set: adds `count` only when the counter stays within `limit`, so parallel
   * reservations from any number of processes never overshoot. Null when refused.
   */
  reserve(id: string, count: number, limit: number): Promise<UsageCounter | null>;
  /** Subtracts `count`, never going below zero. */
  release(id: string, count: number): Promise<void>;
}

/** What VerifyDomain needs from DNS (node's Resolver satisfies it; tests answer from a map). */
export interface TxtResolver {
  resolveTxt(name: string): Promise<string[][]>;
}

export interface DkimKeyPair {
  selector: string;
  /** base64 DER SubjectPublicKeyInfo: the `p=` tag. */
  publicKey: string;
  privateKeyPem: string;
}

export type DkimKeyGenerator = () => Promise<DkimKeyPair>;

/** The accounts unit's repositories over its store. */
export interface AccountsRepositories {
  workspaces: WorkspaceRepository;
  apiKeys: ApiKeyRepository;
  senders: SenderRepository;
  members: MemberRepository;
  templates: TemplateRepository;
  usage: UsageRepository;
}

/** The audience unit's repositories over its store. */
export interface AudienceRepositories {
  properties: PropertyRepository;
  contacts: ContactRepository;
  contactEvents: ContactEventRepository;
  suppressions: SuppressionRepository;
}
