import { badRequest, conflict, errorInfoOf, notFound } from "../../kit/src/errors.js";
import { newId } from "../../kit/src/ids.js";
import { DuplicateKeyError } from "../../kit/src/store/port.js";
import type { ErrorInfo } from "../../../gen/mailroom/common/v1/common_pb.js";
import { parseMailbox } from "./address.js";
import { checkSlug, inferPropertyType, validatePropertyValue, type ContactProperties } from "./properties.js";
import { scopedId, type ContactDoc, type DirectoryRepos, type PropertyType, type PropertyValue } from "./store.js";
import type { Workspaces } from "./workspaces.js";
import { requireTimeZone, requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export interface ContactInput {
  email: string;
  firstName?: string;
  lastName?: string;
  timezone?: string;
  subscribed?: boolean;
  /** Custom properties by slug; null removes one. firstName/lastName here mean the built-ins. */
  properties?: Record<string, unknown>;
}

export interface Page<T> {
  items: T[];
  nextCursor: string;
  hasMore: boolean;
}

export interface BatchItemResult {
  index: number;
  ok: boolean;
  created: boolean;
  error?: ErrorInfo;
}

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 500;
export const STREAM_DEFAULT_BATCH = 500;
export const STREAM_MAX_BATCH = 5_000;
export const BATCH_MAX_ITEMS = 1_000;
const CONTACT_CURSOR = /^ctc_[0-9a-z]{26}$/;
const NAME_MAX = 200;

/** A validated input: what to set on the document and which properties to remove. */
interface Normalized {
  email: string;
  emailLower: string;
  fields: Partial<Pick<ContactDoc, "firstName" | "lastName" | "timezone" | "subscribed">>;
  set: Record<string, PropertyValue>;
  unset: string[];
  /** Properties to create first (only with createMissingProperties). */
  newTypes: Map<string, PropertyType>;
}

function checkName(field: string, value: unknown): string {
  if (typeof value !== "string") throw badRequest("invalid_contact", `${field} must be a string`);
  if (value.length > NAME_MAX || /[\u0000-\u001f\u007f]/.test(value)) {
    throw badRequest("invalid_contact", `${field} must be at most ${NAME_MAX} characters without control characters`);
  }
  return value.trim();
}

export function checkListLimit(limit: number | undefined, max = LIST_MAX_LIMIT, fallback = LIST_DEFAULT_LIMIT): number {
  if (limit === undefined || limit === 0) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw badRequest("invalid_request", `limit must be between 1 and ${max}`);
  return limit;
}

/** Contacts: one per email per workspace (unique index on workspaceId + lower-cased email). */
export class Contacts {
  constructor(
    private readonly repos: DirectoryRepos,
    private readonly workspaces: Workspaces,
    private readonly properties: ContactProperties,
    private readonly now: Clock = systemClock,
  ) {}

  /** Validates everything before anything is written, so a bad input changes nothing. */
  normalize(input: ContactInput, types: Map<string, PropertyType>, createMissing = false): Normalized {
    const box = parseMailbox(input?.email ?? "");
    if (!box || box.name) throw badRequest("invalid_email", `"${String(input?.email ?? "").slice(0, 200)}" is not a valid email address`);
    const fields: Normalized["fields"] = {};
    if (input.firstName !== undefined) fields.firstName = checkName("firstName", input.firstName);
    if (input.lastName !== undefined) fields.lastName = checkName("lastName", input.lastName);
    if (input.timezone !== undefined) fields.timezone = input.timezone === "" ? "" : requireTimeZone(input.timezone);
    if (input.subscribed !== undefined) {
      if (typeof input.subscribed !== "boolean") throw badRequest("invalid_contact", "subscribed must be a boolean");
      fields.subscribed = input.subscribed;
    }
    const set: Record<string, PropertyValue> = {};
    const unset: string[] = [];
    const newTypes = new Map<string, PropertyType>();
    const props = input.properties ?? {};
    if (typeof props !== "object" || Array.isArray(props)) throw badRequest("invalid_contact", "properties must be an object");
    const unknown: string[] = [];
    for (const [key, value] of Object.entries(props)) {
      if (key === "firstName" || key === "lastName") {
        if (value !== null && fields[key] === undefined) fields[key] = checkName(key, value);
        continue;
      }
      if (key === "email") {
        if (typeof value !== "string" || value.trim().toLowerCase() !== box.address.toLowerCase()) {
          throw badRequest("invalid_contact", "properties.email must match the contact's email (a contact's email cannot change)");
        }
        continue;
      }
      let type = types.get(key) ?? newTypes.get(key);
      if (!type) {
        if (!createMissing) {
          unknown.push(key);
          continue;
        }
        checkSlug(key);
        if (value === null) continue;
        type = inferPropertyType(value);
        if (!type) throw badRequest("invalid_property_value", `Property "${key}" must be a string, number or boolean`);
        newTypes.set(key, type);
      }
      if (value === null) unset.push(key);
      else set[key] = validatePropertyValue(key, type, value);
    }
    if (unknown.length) {
      throw badRequest("unknown_contact_property", `Unknown contact propert${unknown.length > 1 ? "ies" : "y"}: ${unknown.join(", ")}; create ${unknown.length > 1 ? "them" : "it"} first`, {
        extra: { unknownProperties: JSON.stringify(unknown) },
      });
    }
    return { email: box.address, emailLower: box.address.toLowerCase(), fields, set, unset, newTypes };
  }

  async create(workspaceId: string, input: ContactInput): Promise<ContactDoc> {
    await this.workspaces.get(workspaceId);
    const n = this.normalize(input, await this.properties.customTypes(workspaceId));
    const existing = await this.findByEmail(workspaceId, n.emailLower);
    if (existing) throw conflict("contact_exists", `A contact with email ${n.email} already exists`);
    const doc = await this.insert(workspaceId, n);
    if (!doc) throw conflict("contact_exists", `A contact with email ${n.email} already exists`);
    return doc;
  }

  /**
   * Creates the contact or applies the given fields to it. On an existing contact,
   * `subscribed: true` does not resubscribe someone who unsubscribed (imports and
   * transactional sends must not undo an unsubscribe; UpdateContact can).
   */
  async upsert(workspaceId: string, input: ContactInput, opts: { createMissingProperties?: boolean; types?: Map<string, PropertyType> } = {}): Promise<{ contact: ContactDoc; created: boolean }> {
    if (!opts.types) await this.workspaces.get(workspaceId);
    const types = opts.types ?? (await this.properties.customTypes(workspaceId));
    const n = this.normalize(input, types, opts.createMissingProperties);
    for (const [slug, type] of n.newTypes) {
      const view = await this.properties.ensure(workspaceId, slug, type).catch(() => undefined);
      // A concurrent caller may have created it with another type: validate against that.
      const actual = view?.type ?? (await this.properties.customTypes(workspaceId)).get(slug);
      if (!actual) throw badRequest("invalid_property_value", `Property "${slug}" could not be created`);
      if (slug in n.set) n.set[slug] = validatePropertyValue(slug, actual, n.set[slug]);
      types.set(slug, actual);
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await this.findByEmail(workspaceId, n.emailLower);
      if (existing) {
        const fields = { ...n.fields };
        if (fields.subscribed === true && !existing.subscribed) delete fields.subscribed;
        return { contact: await this.apply(existing, { ...n, fields }), created: false };
      }
      const doc = await this.insert(workspaceId, n);
      if (doc) return { contact: doc, created: true };
    }
    throw conflict("contact_conflict", `Contact ${n.email} is being changed concurrently; retry`);
  }

  /** Applies fields to an existing contact (404 when there is none). */
  async update(workspaceId: string, input: ContactInput): Promise<ContactDoc> {
    requireWorkspaceId(workspaceId);
    const n = this.normalize(input, await this.properties.customTypes(workspaceId));
    const existing = await this.findByEmail(workspaceId, n.emailLower);
    if (!existing) throw notFound("contact_not_found", `Contact ${n.email} not found`);
    const updated = await this.apply(existing, n);
    if (n.fields.subscribed === true) {
      // An explicit resubscribe lifts an unsubscribe (never a bounce or complaint).
      await this.repos.suppressions.deleteOne({ _id: scopedId(workspaceId, n.emailLower), reason: "unsubscribed" });
    }
    return updated;
  }

  /** Many upserts, each validated and applied on its own; the results keep the input order. */
  async batchUpsert(workspaceId: string, inputs: ContactInput[]): Promise<BatchItemResult[]> {
    await this.workspaces.get(workspaceId);
    if (inputs.length > BATCH_MAX_ITEMS) throw badRequest("invalid_request", `At most ${BATCH_MAX_ITEMS} contacts per batch`);
    const types = await this.properties.customTypes(workspaceId);
    const results: BatchItemResult[] = [];
    const seen = new Map<string, number>();
    for (const [index, input] of inputs.entries()) {
      try {
        const emailLower = String(input?.email ?? "").trim().toLowerCase();
        const first = seen.get(emailLower);
        if (first !== undefined) throw conflict("duplicate_contact", `Duplicate of item ${first} (${emailLower}) in the same batch`);
        const { created } = await this.upsert(workspaceId, input, { types });
        seen.set(emailLower, index);
        results.push({ index, ok: true, created });
      } catch (err) {
        const info = errorInfoOf(err);
        if (!info) throw err;
        results.push({ index, ok: false, created: false, error: info });
      }
    }
    return results;
  }

  async get(workspaceId: string, email: string): Promise<ContactDoc> {
    requireWorkspaceId(workspaceId);
    const box = parseMailbox(email);
    if (!box || box.name) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    const doc = await this.findByEmail(workspaceId, box.address.toLowerCase());
    if (!doc) throw notFound("contact_not_found", `Contact ${box.address} not found`);
    return doc;
  }

  async getById(workspaceId: string, id: string): Promise<ContactDoc> {
    const doc = await this.repos.contacts.findOne({ _id: id, workspaceId: requireWorkspaceId(workspaceId) });
    if (!doc) throw notFound("contact_not_found", `Contact ${id} not found`);
    return doc;
  }

  async delete(workspaceId: string, email: string): Promise<void> {
    const doc = await this.get(workspaceId, email);
    await this.repos.contacts.deleteOne({ _id: doc._id, workspaceId });
  }

  /** Cursor paging in id order: each page is one index range scan, whatever the offset. */
  async list(workspaceId: string, opts: { limit?: number; cursor?: string; subscribedOnly?: boolean } = {}): Promise<Page<ContactDoc>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit);
    if (opts.cursor && !CONTACT_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.rawPage(workspaceId, limit + 1, opts.cursor, opts.subscribedOnly);
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  /** Every matching contact, one page at a time: memory stays at one page. */
  async *stream(workspaceId: string, opts: { batchSize?: number; subscribedOnly?: boolean } = {}): AsyncGenerator<ContactDoc[]> {
    requireWorkspaceId(workspaceId);
    const batchSize = checkListLimit(opts.batchSize, STREAM_MAX_BATCH, STREAM_DEFAULT_BATCH);
    let cursor: string | undefined;
    for (;;) {
      const items = await this.rawPage(workspaceId, batchSize, cursor, opts.subscribedOnly);
      if (items.length) yield items;
      if (items.length < batchSize) return;
      cursor = items[items.length - 1]._id;
    }
  }

  private async rawPage(workspaceId: string, limit: number, cursor: string | undefined, subscribedOnly?: boolean): Promise<ContactDoc[]> {
    const filter: Record<string, unknown> = { workspaceId };
    if (subscribedOnly) filter.subscribed = true;
    if (cursor) filter._id = { $gt: cursor };
    return this.repos.contacts.find(filter, { sort: { _id: 1 }, limit });
  }

  async count(workspaceId: string): Promise<number> {
    return this.repos.contacts.countDocuments({ workspaceId: requireWorkspaceId(workspaceId) });
  }

  private findByEmail(workspaceId: string, emailLower: string): Promise<ContactDoc | null> {
    return this.repos.contacts.findOne({ workspaceId, emailLower });
  }

  /** Inserts; null when the unique index says another writer created it first. */
  private async insert(workspaceId: string, n: Normalized): Promise<ContactDoc | null> {
    const at = this.now();
    const unsubscribed = await this.repos.suppressions.findOne({ _id: scopedId(workspaceId, n.emailLower), reason: "unsubscribed" });
    const doc: ContactDoc = {
      _id: newId("ctc"),
      workspaceId,
      email: n.email,
      emailLower: n.emailLower,
      firstName: n.fields.firstName ?? "",
      lastName: n.fields.lastName ?? "",
      timezone: n.fields.timezone ?? "",
      subscribed: unsubscribed ? false : (n.fields.subscribed ?? true),
      properties: { ...n.set },
      createdAt: at,
      updatedAt: at,
    };
    try {
      await this.repos.contacts.insertOne(doc);
      return doc;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return null;
      throw err;
    }
  }

  /** Writes only what differs; an input that changes nothing writes nothing. */
  private async apply(existing: ContactDoc, n: Normalized): Promise<ContactDoc> {
    const $set: Record<string, unknown> = {};
    const $unset: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(n.fields)) {
      if (existing[k] !== v) $set[k] = v;
    }
    for (const [k, v] of Object.entries(n.set)) {
      if (existing.properties?.[k] !== v) $set[`properties.${k}`] = v;
    }
    for (const k of n.unset) {
      if (existing.properties && k in existing.properties) $unset[`properties.${k}`] = "";
    }
    if (!Object.keys($set).length && !Object.keys($unset).length) return existing;
    $set.updatedAt = this.now();
    const updated = await this.repos.contacts.findOneAndUpdate(
      { _id: existing._id, workspaceId: existing.workspaceId },
      { $set, ...(Object.keys($unset).length ? { $unset } : {}) },
      { returnDocument: "after" },
    );
    if (!updated) throw notFound("contact_not_found", `Contact ${existing.email} not found`);
    return updated;
  }
}

