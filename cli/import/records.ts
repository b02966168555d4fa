/**
 * What an importer reads out of another provider's export files (`mailroom import <provider>`):
 * one record per row, in the terms of Mailroom (a contact, a suppression), or the row's
 * rejection or the reason it does not carry over. The importers only read; `apply.ts` writes.
 */
export type SuppressionReasonName = "hard_bounce" | "complaint" | "manual" | "unsubscribed" | "imported";
export type ImportStatus = "SUBSCRIBED" | "UNSUBSCRIBED" | "ARCHIVED" | "OPT_IN_PENDING";

/** Where a record came from, for the report: the file's name and the 1-based line (or item) in it. */
export interface RecordOrigin {
  file: string;
  line: number;
}

export interface ContactRecord extends RecordOrigin {
  kind: "contact";
  email: string;
  firstName?: string;
  lastName?: string;
  timezone?: string;
  /** Unset: a new contact is SUBSCRIBED and an existing one keeps its status. */
  status?: ImportStatus;
  /** Built-in fields given as text (phone, city, countryCode, language). */
  fields: Record<string, string>;
  /** Custom properties as text, by slug (created as string properties when missing). */
  properties: Record<string, string>;
  /** Display names of the groups (the provider's tags or lists) the contact is in. */
  groups: string[];
  createdAt?: Date;
}

export interface SuppressionRecord extends RecordOrigin {
  kind: "suppression";
  email?: string;
  domain?: string;
  reason: SuppressionReasonName;
  createdAt?: Date;
  /** The import's file name, kept as the suppression's source. */
  source: string;
}

/** A row that cannot be imported (a missing address, a value that cannot be read). */
export interface RejectedRecord extends RecordOrigin {
  kind: "rejected";
  email: string;
  reason: string;
}

/** A row that is not something Mailroom keeps (a soft bounce, an active bounce): counted, not imported. */
export interface SkippedRecord extends RecordOrigin {
  kind: "skipped";
  reason: string;
}

export type ImportRecord = ContactRecord | SuppressionRecord | RejectedRecord | SkippedRecord;

/** A problem with a file as a whole (not an export this importer reads, or not well-formed): nothing is imported. */
export class ImportFileError extends Error {}

export interface Importer {
  /** The provider's name, as typed on the command line. */
  name: string;
  /** Every record of the files, in file order. Throws ImportFileError for a file it cannot read. */
  read(files: string[]): AsyncIterable<ImportRecord>;
}

export function contact(origin: RecordOrigin, email: string): ContactRecord {
  return { kind: "contact", ...origin, email: email.trim(), fields: {}, properties: {}, groups: [] };
}

/**
 * A date as exports write them: ISO 8601, "YYYY-MM-DD HH:MM:SS" (UTC), or Unix seconds
 * (milliseconds above 1e11). Undefined when empty or unreadable (a date never rejects a row).
 */
export function parseDate(raw: unknown): Date | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  let date: Date;
  if (typeof raw === "number" || /^\d+(\.\d+)?$/.test(String(raw).trim())) {
    const n = Number(raw);
    date = new Date(n > 1e11 ? n : n * 1000);
  } else {
    const text = String(raw).trim();
    // "2024-01-15 09:12:00" (Mailchimp, UTC) and "2024-11-05 10:00:00.123+00" (Resend) as ISO 8601.
    const spaced = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(text);
    const zone = (z: string | undefined) => (!z || z === "Z" ? "Z" : z.length === 3 ? `${z}:00` : z.includes(":") ? z : `${z.slice(0, 3)}:${z.slice(3)}`);
    date = new Date(spaced ? `${spaced[1]}T${spaced[2]}${zone(spaced[3])}` : text);
  }
  return Number.isNaN(date.getTime()) || date.getTime() > Date.now() + 86_400_000 ? undefined : date;
}

/** true / false as exports write them (true, yes, 1; false, no, 0, empty); undefined otherwise. */
export function parseFlag(raw: unknown): boolean | undefined {
  if (typeof raw === "boolean") return raw;
  const text = String(raw ?? "").trim().toLowerCase();
  if (["true", "yes", "1", "y"].includes(text)) return true;
  if (["false", "no", "0", "n", ""].includes(text)) return false;
  return undefined;
}

/** A custom property's slug for a column header ("Company Name" → company_name). */
export function propertySlug(header: string): string {
  let slug = header.trim().toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");
  if (!/^[a-z]/.test(slug)) slug = `p_${slug}`;
  return slug.slice(0, 64);
}

/** A group's publicId for a tag or list name ("Early adopters" → early-adopters). */
export function groupPublicId(name: string): string {
  const id = name.trim().toLowerCase().replace(/[^a-z0-9_.:@+=-]+/g, "-").replace(/^[^a-z0-9_]+|-+$/g, "");
  return (id || "group").slice(0, 200);
}

/** Looks like an address (the audience unit checks it properly; this only catches empty and obviously broken cells). */
export const looksLikeEmail = (text: string) => /^[^\s@]+@[^\s@]+$/.test(text.trim());
