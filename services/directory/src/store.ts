import { DuplicateKeyError, type Collection, type Doc, type Filter, type Store, type Update } from "../../kit/src/store/port.js";

/**
 * Documents of the directory's collections. Ids are strings; compound natural keys
 * ("<workspaceId>:<key>") make per-workspace uniqueness hold on both store adapters,
 * and every query names its workspaceId so no tenant can reach another's rows.
 */
export interface WorkspaceFlags {
  broadcastEarlyAccess: boolean;
  emailApiAddon: boolean;
  verified: boolean;
}

export interface WorkspaceDoc {
  _id: string;
  name: string;
  timezone: string;
  flags: WorkspaceFlags;
  monthlyLimit: number;
  sendingAccountNew: boolean;
  createdAt: Date;
  updatedAt: Date;
  [k: string]: unknown;
}

export interface ApiKeyDoc {
  _id: string;
  workspaceId: string;
  name: string;
  /** Non-secret start of the key, shown in listings. */
  prefix: string;
  /** sha256(plain key), hex. The plain key is never stored. */
  hash: string;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
  [k: string]: unknown;
}

export interface SenderEmailDoc {
  _id: string;
  workspaceId: string;
  email: string;
  verified: boolean;
  createdAt: Date;
  verifiedAt: Date | null;
  [k: string]: unknown;
}

export interface DomainDoc {
  _id: string;
  workspaceId: string;
  domain: string;
  verified: boolean;
  selector: string;
  /** base64 SubjectPublicKeyInfo, the DKIM `p=` value. */
  publicKey: string;
  privateKeyPem: string;
  /** Per record purpose, whether the last DNS check found it. */
  recordsFound: { dkim: boolean; spf: boolean; dmarc: boolean };
  verificationError: string;
  lastCheckedAt: Date | null;
  createdAt: Date;
  verifiedAt: Date | null;
  [k: string]: unknown;
}

export interface MemberDoc {
  _id: string;
  workspaceId: string;
  email: string;
  createdAt: Date;
  [k: string]: unknown;
}

export type PropertyType = "string" | "number" | "boolean" | "date";

export interface PropertyDoc {
  _id: string;
  workspaceId: string;
  slug: string;
  type: PropertyType;
  createdAt: Date;
  [k: string]: unknown;
}

export type PropertyValue = string | number | boolean;

export interface ContactDoc {
  _id: string;
  workspaceId: string;
  email: string;
  emailLower: string;
  firstName: string;
  lastName: string;
  timezone: string;
  subscribed: boolean;
  properties: Record<string, PropertyValue>;
  createdAt: Date;
  updatedAt: Date;
  [k: string]: unknown;
}

export type SuppressionReason = "unsubscribed" | "hard_bounce" | "complaint" | "manual";

export interface SuppressionDoc {
  _id: string;
  workspaceId: string;
  emailLower: string;
  reason: SuppressionReason;
  detail: string;
  createdAt: Date;
  [k: string]: unknown;
}

export interface TemplateDoc {
  _id: string;
  workspaceId: string;
  name: string;
  subject: string;
  html: string;
  text: string;
  previewText: string;
  variables: string[];
  createdAt: Date;
  updatedAt: Date;
  [k: string]: unknown;
}

export interface UsageDoc {
  _id: string;
  workspaceId: string;
  /** "YYYY-MM" (UTC). */
  period: string;
  used: number;
  [k: string]: unknown;
}

export interface DirectoryRepos {
  workspaces: Collection<WorkspaceDoc>;
  apiKeys: Collection<ApiKeyDoc>;
  senderEmails: Collection<SenderEmailDoc>;
  domains: Collection<DomainDoc>;
  members: Collection<MemberDoc>;
  properties: Collection<PropertyDoc>;
  contacts: Collection<ContactDoc>;
  suppressions: Collection<SuppressionDoc>;
  templates: Collection<TemplateDoc>;
  usage: Collection<UsageDoc>;
}

/** Compound id for documents unique per workspace. */
export const scopedId = (workspaceId: string, key: string) => `${workspaceId}:${key}`;

/** Opens the collections and makes sure their indexes exist (idempotent). */
export async function openRepos(store: Store): Promise<DirectoryRepos> {
  const repos: DirectoryRepos = {
    workspaces: store.collection<WorkspaceDoc>("workspaces"),
    apiKeys: store.collection<ApiKeyDoc>("api_keys"),
    senderEmails: store.collection<SenderEmailDoc>("sender_emails"),
    domains: store.collection<DomainDoc>("domains"),
    members: store.collection<MemberDoc>("members"),
    properties: store.collection<PropertyDoc>("contact_properties"),
    contacts: store.collection<ContactDoc>("contacts"),
    suppressions: store.collection<SuppressionDoc>("suppressions"),
    templates: store.collection<TemplateDoc>("templates"),
    usage: store.collection<UsageDoc>("usage"),
  };
  await Promise.all([
    repos.apiKeys.createIndex({ keys: { hash: 1 }, unique: true }),
    repos.apiKeys.createIndex({ keys: { workspaceId: 1 } }),
    repos.senderEmails.createIndex({ keys: { workspaceId: 1 } }),
    repos.domains.createIndex({ keys: { workspaceId: 1 } }),
    repos.members.createIndex({ keys: { workspaceId: 1 } }),
    repos.properties.createIndex({ keys: { workspaceId: 1 } }),
    repos.contacts.createIndex({ keys: { workspaceId: 1, emailLower: 1 }, unique: true }),
    repos.contacts.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
    repos.suppressions.createIndex({ keys: { workspaceId: 1, emailLower: 1 }, unique: true }),
    repos.templates.createIndex({ keys: { workspaceId: 1, name: 1 }, unique: true }),
    repos.templates.createIndex({ keys: { workspaceId: 1, _id: 1 } }),
  ]);
  return repos;
}

/**
 * An insert-if-missing upsert. Two concurrent upserts of the same id can both miss and
 * race to insert (MongoDB reports E11000 for the loser); the document exists either way.
 */
export async function ensureDoc<T extends Doc>(collection: Collection<T>, filter: Filter, update: Update): Promise<void> {
  try {
    await collection.updateOne(filter, update, { upsert: true });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
}
