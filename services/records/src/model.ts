/**
 * The accounts and audience units' records. Ids are strings; things unique per workspace carry a compound
 * natural id ("<workspaceId>:<key>", see scopedId) so uniqueness holds on every store, and
 * every lookup names its workspace so no tenant can reach another's records.
 */
export interface WorkspaceFlags {
  broadcastEarlyAccess: boolean;
  emailApiAddon: boolean;
  verified: boolean;
}

export interface Workspace {
  _id: string;
  name: string;
  timezone: string;
  flags: WorkspaceFlags;
  monthlyLimit: number;
  sendingAccountNew: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** Set while an operator has paused the workspace's sending (absent or null: sending). */
  sendingPaused?: OperatorHold | null;
  /** Set while an operator has banned the workspace (absent or null: not banned). */
  banned?: OperatorHold | null;
}

/** An operator's pause or ban: why and since when. */
export interface OperatorHold {
  reason: string;
  at: Date;
}

export interface ApiKey {
  _id: string;
  workspaceId: string;
  /** The display name. */
  name: string;
  /** Non-secret start of the key, shown in listings. */
  prefix: string;
  /** sha256(plain key), hex. The plain key is never stored. */
  hash: string;
  scopes: string[];
  createdAt: Date;
  /** Absent on keys made before keys could change. */
  updatedAt?: Date;
  revokedAt: Date | null;
  /** The owning member's publicId ("mbr_…"); absent: no owner. */
  ownerMemberId?: string;
  /** When the key last authenticated, written at most once a minute per key (absent: not since this was recorded). */
  lastUsedAt?: Date;
}

export interface SenderEmail {
  _id: string;
  workspaceId: string;
  email: string;
  verified: boolean;
  createdAt: Date;
  verifiedAt: Date | null;
}

export interface SenderDomain {
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
}

/** Console roles, highest first (DESIGN §9.9). */
export const MEMBER_ROLES = ["OWNER", "ADMIN", "EDITOR", "VIEWER"] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];
export type MemberStatus = "ACTIVE" | "INVITED";

/**
 * A workspace member: scopedId(workspaceId, email), so one per address per workspace.
 * Members stored before roles have no publicId/role/status: the store gives them one when it
 * opens (EDITOR, ACTIVE; the oldest of a workspace without an owner becomes OWNER).
 */
export interface Member {
  _id: string;
  workspaceId: string;
  email: string;
  createdAt: Date;
  /** "mbr_…": the id the API, keys' owners and sessions use. */
  publicId?: string;
  role?: MemberRole;
  status?: MemberStatus;
  invitedBy?: string;
  lastSignInAt?: Date | null;
  /** OpenID Connect identity remembered at the first OIDC sign-in. */
  oidcIssuer?: string;
  oidcSubject?: string;
}

export type PropertyType = "string" | "number" | "boolean" | "date" | "select" | "multi_select";

export interface PropertyOption {
  id: string;
  value: string;
  displayName: string;
  color: string;
}

export interface ContactProperty {
  /** scopedId(workspaceId, slug): one property per slug per workspace. */
  _id: string;
  /** Public id (cpr_…); absent on properties made before public ids (their slug serves). */
  publicId?: string;
  workspaceId: string;
  slug: string;
  type: PropertyType;
  displayName?: string;
  description?: string;
  /** select / multi_select only. */
  options?: PropertyOption[];
  createdAt: Date;
  updatedAt?: Date;
}

export type PropertyValue = string | number | boolean | string[];

export const CONTACT_STATUSES = ["SUBSCRIBED", "UNSUBSCRIBED", "ARCHIVED", "OPT_IN_PENDING", "BANNED"] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];
export const CONTACT_SOURCES = ["DASHBOARD", "PUBLIC_API", "CSV_IMPORT", "MAILCHIMP", "SENDGRID", "TRANSACTIONAL_EMAIL", "ZAPIER", "STRIPE"] as const;
export type ContactSource = (typeof CONTACT_SOURCES)[number];

/** Built-in text properties beyond the names, by API slug ("" when unset). */
export const EXTRA_BUILT_INS = ["avatarUrl", "city", "language", "phone", "birthday", "countryCode"] as const;
export type ExtraBuiltIn = (typeof EXTRA_BUILT_INS)[number];

export interface Contact extends Partial<Record<ExtraBuiltIn, string>> {
  _id: string;
  workspaceId: string;
  email: string;
  emailLower: string;
  firstName: string;
  lastName: string;
  timezone: string;
  /** Broadcast audiences are the SUBSCRIBED contacts. */
  status: ContactStatus;
  source: ContactSource;
  /** Documents written before `status` carry this instead (read through contactStatus). */
  subscribed?: boolean;
  properties: Record<string, PropertyValue>;
  createdAt: Date;
  updatedAt: Date;
  /**
   * When the status last changed (set by every write that changes it; absent until the first
   * change). A late unsubscribe event older than this is not applied (MailOutcomes).
   */
  statusChangedAt?: Date;
}

/** The status of a stored contact, also for documents written before statuses existed. */
export const contactStatus = (c: Pick<Contact, "status" | "subscribed">): ContactStatus =>
  c.status ?? (c.subscribed === false ? "UNSUBSCRIBED" : "SUBSCRIBED");

/** One event about a contact (POST /v1/events), unique per (workspaceId, messageId). */
export interface ContactEvent {
  _id: string;
  workspaceId: string;
  contactId: string;
  email: string;
  name: string;
  properties: Record<string, unknown>;
  timestamp: Date;
  messageId: string;
  receivedAt: Date;
}

export const SUPPRESSION_REASONS = ["hard_bounce", "complaint", "manual", "unsubscribed", "imported"] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export interface Suppression {
  _id: string;
  workspaceId: string;
  /**
   * The key (unique per workspace): the lower-cased address; `@domain` for a whole domain;
   * `sha256:…` for an erased address (suppression.ts). In a check's answer, the address asked.
   */
  emailLower: string;
  /** A whole-domain suppression's domain (in a check's answer: the domain that matched). */
  domain?: string;
  reason: SuppressionReason;
  detail: string;
  /** What caused it: an email (trs_…) or broadcast (cmp_…) id, an import's file name. */
  source?: string;
  createdAt: Date;
}

export interface Template {
  _id: string;
  workspaceId: string;
  name: string;
  subject: string;
  html: string;
  text: string;
  previewText: string;
  variables: string[];
  /** Sender of templated sends ("" = the workspace's default sender). */
  fromEmail?: string;
  fromName?: string;
  replyTo?: ReplyTo[];
  displayName?: string;
  /** Absent on templates made before statuses: ACTIVE. */
  status?: TemplateStatus;
  /** Absent (templates made before kinds): "template". */
  kind?: TemplateKind;
  /** Absent: "liquid". An MJML template's `html` is compiled from `source`. */
  format?: TemplateFormat;
  source?: string;
  /** Name of its layout (a template of kind "layout"). */
  layout?: string;
  /** Absent (templates made before versions): 1. */
  version?: number;
  /** Snippets its content renders, as found when saved. */
  snippets?: string[];
  /** Its content needs the Liquid engine (tags, filters, a layout or snippets); absent: false. */
  liquid?: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const TEMPLATE_KINDS = ["template", "layout", "snippet"] as const;
export type TemplateKind = (typeof TEMPLATE_KINDS)[number];
export const TEMPLATE_FORMATS = ["liquid", "mjml"] as const;
export type TemplateFormat = (typeof TEMPLATE_FORMATS)[number];

/** One saved version of a template's content (kept at every change; restore copies one back). */
export interface TemplateVersion {
  _id: string;
  workspaceId: string;
  templateId: string;
  version: number;
  subject: string;
  html: string;
  text: string;
  previewText: string;
  format: TemplateFormat;
  source?: string;
  layout?: string;
  createdAt: Date;
}

export interface ReplyTo {
  email: string;
  name?: string;
}

export const TEMPLATE_STATUSES = ["DRAFT", "ACTIVE", "ARCHIVED", "PAUSED"] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

export interface UsageCounter {
  _id: string;
  workspaceId: string;
  /** "YYYY-MM" (UTC). */
  period: string;
  used: number;
}

/** Id of a record unique per workspace (a sender, member, property, suppression, month). */
export const scopedId = (workspaceId: string, key: string) => `${workspaceId}:${key}`;

export interface Page<T> {
  items: T[];
  nextCursor: string;
  hasMore: boolean;
}

export type GroupTraits = Record<string, unknown>;

/** A group (collection `groups`), unique per workspace by publicId (the audience unit's). */
export interface Group {
  /** grp_… */
  _id: string;
  workspaceId: string;
  publicId: string;
  displayName?: string;
  traits?: GroupTraits;
  createdAt: Date;
  updatedAt?: Date;
}
