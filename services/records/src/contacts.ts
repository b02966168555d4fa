import { badRequest, type AppErrorInit } from "@mailroom/kit/errors.js";
import { CONTACT_SOURCES, CONTACT_STATUSES, contactStatus, type Contact, type ContactSource, type ContactStatus, type ExtraBuiltIn } from "./model.js";
import type { ContactQuery } from "./ports.js";

/** Contacts' input and its rules (the audience unit's contacts, imports, forms and bootstrap). */

export interface ContactInput {
  email: string;
  firstName?: string;
  lastName?: string;
  timezone?: string;
  status?: ContactStatus | string;
  /** Deprecated alias of status (true: SUBSCRIBED, false: UNSUBSCRIBED); status wins. */
  subscribed?: boolean;
  /** Source of a contact this call creates (default PUBLIC_API). */
  source?: ContactSource;
  /** Creation time of a contact this call creates (migrations). */
  createdAt?: Date;
  /**
   * Custom properties by slug, and the built-ins by API slug (firstName, lastName,
   * avatarUrl, city, language, phone, birthday, countryCode, status, timezone); null
   * removes one. A multi-select takes an array (replaces) or { add, remove } (edits).
   */
  properties?: Record<string, unknown>;
  /**
   * Values given as text (a CSV cell, a command-line argument) by slug, converted to each
   * property's type here (numbers, true/false/yes/no/1/0, ISO dates, comma lists); empty
   * text means no value. Also takes the built-ins, "status" and "subscribed" (yes/no).
   */
  textProperties?: Record<string, string>;
}

export interface BatchItemResult {
  index: number;
  ok: boolean;
  created: boolean;
  contact?: Contact;
  error?: AppErrorInit;
}

export interface ContactListOptions extends ContactQuery {
  limit?: number;
  cursor?: string;
  newestFirst?: boolean;
  /** Only SUBSCRIBED contacts (broadcast audiences). */
  subscribedOnly?: boolean;
}

export const STREAM_DEFAULT_BATCH = 500;
export const STREAM_MAX_BATCH = 5_000;
export const BATCH_MAX_ITEMS = 1_000;
export const CONTACT_CURSOR = /^ctc_[0-9a-z]{26}$/;
export const NAME_MAX = 200;
export const URL_MAX = 2_048;
export const TEXT_MAX = 255;
export const SEARCH_MAX = 200;
/** A stored contact that only a transactional send made: not in any audience yet. */
export const isTransactionalPending = (c: Contact) => contactStatus(c) === "OPT_IN_PENDING" && c.source === "TRANSACTIONAL_EMAIL";

export function checkContactText(field: string, value: unknown, max: number): string {
  if (typeof value !== "string") throw badRequest("invalid_contact", `${field} must be a string`);
  if (value.length > max || /[\u0000-\u001f\u007f]/.test(value)) {
    throw badRequest("invalid_contact", `${field} must be at most ${max} characters without control characters`);
  }
  return value.trim();
}

export function parseContactStatus(raw: unknown): ContactStatus {
  const name = typeof raw === "string" ? raw.trim().toUpperCase() : raw;
  if (typeof name === "string" && (CONTACT_STATUSES as readonly string[]).includes(name)) return name as ContactStatus;
  throw badRequest("invalid_contact", `status ${JSON.stringify(raw)} is not one of ${CONTACT_STATUSES.join(", ")}`);
}

export function parseContactSource(raw: unknown): ContactSource {
  if (typeof raw === "string" && (CONTACT_SOURCES as readonly string[]).includes(raw)) return raw as ContactSource;
  throw badRequest("invalid_contact", `source ${JSON.stringify(raw)} is not one of ${CONTACT_SOURCES.join(", ")}`);
}

/** A built-in text property's value ("" clears it). */
export function builtInValue(key: ExtraBuiltIn, value: unknown): string {
  const text = checkContactText(key, value, key === "avatarUrl" ? URL_MAX : TEXT_MAX);
  if (!text) return "";
  if (key === "countryCode") {
    if (!/^[A-Za-z]{2}$/.test(text)) throw badRequest("invalid_contact", `countryCode ${JSON.stringify(text)} must be a two-letter ISO 3166-1 code`);
    return text.toUpperCase();
  }
  if (key === "birthday") {
    const day = /^(\d{4}-\d{2}-\d{2})(?:[T ].*)?$/.exec(text)?.[1];
    if (!day || Number.isNaN(new Date(`${day}T00:00:00Z`).getTime()) || new Date(`${day}T00:00:00Z`).toISOString().slice(0, 10) !== day) {
      throw badRequest("invalid_contact", `birthday ${JSON.stringify(text)} must be an ISO date (YYYY-MM-DD)`);
    }
    return day;
  }
  return text;
}


