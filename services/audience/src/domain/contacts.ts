import { AppError, badRequest, conflict, notFound, type AppErrorInit } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import { parseMailbox } from "@mailroom/records/address.js";
import { checkSlug, coercePropertyText, inferPropertyType, validatePropertyValue, type ContactProperties, type PropertyDef } from "./properties.js";
import {
  EXTRA_BUILT_INS, contactStatus, scopedId,
  type Contact, type ExtraBuiltIn, type Page, type PropertyValue,
} from "@mailroom/records/model.js";
import type { ContactChange, ContactQuery, ContactRepository, ContactWrite, SuppressionRepository } from "@mailroom/records/ports.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";
import { checkListLimit, requireTimeZone, requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

export { checkListLimit, LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } from "@mailroom/records/validation.js";

export type { Page };
export * from "@mailroom/records/contacts.js";
import {
  BATCH_MAX_ITEMS, builtInValue, checkContactText, CONTACT_CURSOR, isTransactionalPending, NAME_MAX, parseContactStatus, SEARCH_MAX, STREAM_DEFAULT_BATCH, STREAM_MAX_BATCH,
  type BatchItemResult, type ContactInput, type ContactListOptions,
} from "@mailroom/records/contacts.js";

type Fields = Partial<Pick<Contact, "firstName" | "lastName" | "timezone" | "status" | ExtraBuiltIn>>;

/** A validated input: what to set on the document and which properties to remove. */
interface Normalized {
  email: string;
  emailLower: string;
  fields: Fields;
  set: Record<string, PropertyValue>;
  unset: string[];
  /** Multi-select `{ add, remove }` edits, resolved against the stored value when written. */
  edits: Record<string, { def: PropertyDef; edit: unknown }>;
  /** Properties to create first (only with createMissingProperties). */
  newTypes: Map<string, PropertyDef>;
}

/**
 * Contacts: one per email per workspace (unique index on workspaceId + lower-cased email).
 * Status decides audiences: broadcasts go to SUBSCRIBED contacts. A contact a transactional
 * send creates (source TRANSACTIONAL_EMAIL) is OPT_IN_PENDING until it is subscribed by the
 * API, an import or its owner (DESIGN §6).
 */
export class Contacts {
  constructor(
    private readonly repo: ContactRepository,
    private readonly suppressions: SuppressionRepository,
    private readonly workspaces: WorkspaceLookup,
    private readonly properties: ContactProperties,
    private readonly now: Clock = systemClock,
  ) {}

  /** Validates everything before anything is written, so a bad input changes nothing. */
  normalize(input: ContactInput, types: Map<string, PropertyDef>, createMissing = false): Normalized {
    const box = parseMailbox(input?.email ?? "");
    if (!box || box.name) throw badRequest("invalid_email", `"${String(input?.email ?? "").slice(0, 200)}" is not a valid email address`);
    const fields: Fields = {};
    const given = input.properties ?? {};
    if (typeof given !== "object" || given === null || Array.isArray(given)) throw badRequest("invalid_contact", "properties must be an object");
    // Text conversions first: a CSV row's first complaint is about the value it typed wrong.
    const props = { ...given, ...this.typedTexts(input, given, types, fields) };
    if (input.firstName !== undefined) fields.firstName = checkContactText("firstName", input.firstName, NAME_MAX);
    if (input.lastName !== undefined) fields.lastName = checkContactText("lastName", input.lastName, NAME_MAX);
    if (input.timezone !== undefined) fields.timezone = input.timezone === "" ? "" : requireTimeZone(input.timezone);
    if (input.status !== undefined) fields.status = parseContactStatus(input.status);
    else if (input.subscribed !== undefined && fields.status === undefined) {
      if (typeof input.subscribed !== "boolean") throw badRequest("invalid_contact", "subscribed must be a boolean");
      fields.status = input.subscribed ? "SUBSCRIBED" : "UNSUBSCRIBED";
    }
    const set: Record<string, PropertyValue> = {};
    const unset: string[] = [];
    const edits: Normalized["edits"] = {};
    const newTypes = new Map<string, PropertyDef>();
    const unknown: string[] = [];
    for (const [key, value] of Object.entries(props)) {
      if (key === "firstName" || key === "lastName") {
        if (fields[key] === undefined) fields[key] = value === null ? "" : checkContactText(key, value, NAME_MAX);
        continue;
      }
      if ((EXTRA_BUILT_INS as readonly string[]).includes(key)) {
        fields[key as ExtraBuiltIn] = value === null ? "" : builtInValue(key as ExtraBuiltIn, value);
        continue;
      }
      if (key === "status") {
        if (value !== null && fields.status === undefined) fields.status = parseContactStatus(value);
        continue;
      }
      if (key === "timezone") {
        if (fields.timezone === undefined) fields.timezone = value === null || value === "" ? "" : requireTimeZone(String(value));
        continue;
      }
      if (key === "email") {
        if (typeof value !== "string" || value.trim().toLowerCase() !== box.address.toLowerCase()) {
          throw badRequest("invalid_contact", "properties.email must match the contact's email (a contact's email cannot change)");
        }
        continue;
      }
      let def = types.get(key) ?? newTypes.get(key);
      if (!def) {
        if (!createMissing) {
          unknown.push(key);
          continue;
        }
        checkSlug(key);
        if (value === null) continue;
        const type = inferPropertyType(value);
        if (!type) throw badRequest("invalid_property_value", `Property "${key}" must be a string, number or boolean`);
        def = { type };
        newTypes.set(key, def);
      }
      if (value === null) unset.push(key);
      else if (def.type === "multi_select" && value && typeof value === "object" && !Array.isArray(value)) {
        validatePropertyValue(key, def, value, []); // options checked now, applied to the stored list later
        edits[key] = { def, edit: value };
      } else set[key] = validatePropertyValue(key, def, value);
    }
    if (unknown.length) {
      throw badRequest("unknown_contact_property", `Unknown contact propert${unknown.length > 1 ? "ies" : "y"}: ${unknown.join(", ")}; create ${unknown.length > 1 ? "them" : "it"} first`, {
        extra: { unknownProperties: JSON.stringify(unknown) },
      });
    }
    return { email: box.address, emailLower: box.address.toLowerCase(), fields, set, unset, edits, newTypes };
  }

  /** textProperties as typed values (status and subscribed go straight to `fields`). */
  private typedTexts(input: ContactInput, given: Record<string, unknown>, types: Map<string, PropertyDef>, fields: Fields): Record<string, unknown> {
    const texts = input.textProperties ?? {};
    if (typeof texts !== "object" || texts === null || Array.isArray(texts)) throw badRequest("invalid_contact", "textProperties must be an object");
    const out: Record<string, unknown> = {};
    for (const [key, text] of Object.entries(texts)) {
      if (typeof text !== "string") throw badRequest("invalid_contact", `textProperties.${key} must be a string`);
      if (key in given) throw badRequest("invalid_contact", `Property "${key}" is given both as a value and as text`);
      if (key === "subscribed") {
        const value = coercePropertyText(key, "boolean", text);
        if (value !== undefined && fields.status === undefined) fields.status = value ? "SUBSCRIBED" : "UNSUBSCRIBED";
        continue;
      }
      if (key === "status") {
        if (text.trim()) fields.status = parseContactStatus(text);
        continue;
      }
      const def = types.get(key);
      // Built-ins and unknown slugs go on as text: normalize checks them like any value.
      const value = def ? coercePropertyText(key, def, text) : text.trim() === "" ? undefined : text;
      if (value !== undefined) out[key] = value;
    }
    return out;
  }

  async create(workspaceId: string, input: ContactInput): Promise<Contact> {
    await this.workspaces.get(workspaceId);
    const n = this.normalize(input, await this.properties.customTypes(workspaceId));
    const existing = await this.findByEmail(workspaceId, n.emailLower);
    if (existing) throw conflict("contact_exists", `A contact with email ${n.email} already exists`);
    const doc = await this.insert(workspaceId, n, input);
    if (!doc) throw conflict("contact_exists", `A contact with email ${n.email} already exists`);
    return doc;
  }

  /**
   * Creates the contact or applies the given fields to it. On an existing contact an upsert
   * never lifts UNSUBSCRIBED or BANNED (imports and sends must not undo an unsubscribe;
   * UpdateContact can). An upsert that is not a transactional send subscribes a contact
   * that only a transactional send had made (OPT_IN_PENDING) unless it names a status.
   */
  async upsert(workspaceId: string, input: ContactInput, opts: { createMissingProperties?: boolean; types?: Map<string, PropertyDef> } = {}): Promise<{ contact: Contact; created: boolean }> {
    if (!opts.types) await this.workspaces.get(workspaceId);
    const types = opts.types ?? (await this.properties.customTypes(workspaceId));
    const n = this.normalize(input, types, opts.createMissingProperties);
    // A send's contactProperties never subscribe anyone (nor change a status): DESIGN §6.
    if (input.source === "TRANSACTIONAL_EMAIL") delete n.fields.status;
    for (const [slug, { type }] of n.newTypes) {
      const view = await this.properties.ensure(workspaceId, slug, type).catch(() => undefined);
      // A concurrent caller may have created it with another type: validate against that.
      const actual = view ?? (await this.properties.customTypes(workspaceId)).get(slug);
      if (!actual) throw badRequest("invalid_property_value", `Property "${slug}" could not be created`);
      if (slug in n.set) n.set[slug] = validatePropertyValue(slug, actual, n.set[slug]);
      types.set(slug, { type: actual.type, options: actual.options });
    }
    return this.write(workspaceId, n, input);
  }

  private async write(workspaceId: string, n: Normalized, input: ContactInput): Promise<{ contact: Contact; created: boolean }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const existing = await this.findByEmail(workspaceId, n.emailLower);
      if (existing) return { contact: await this.apply(existing, await this.upsertOnto(workspaceId, existing, n, input)), created: false };
      const doc = await this.insert(workspaceId, n, input);
      if (doc) return { contact: doc, created: true };
    }
    throw conflict("contact_conflict", `Contact ${n.email} is being changed concurrently; retry`);
  }

  /** The upsert's fields for a contact that exists: the status rules of `upsert`. */
  private async upsertOnto(workspaceId: string, existing: Contact, n: Normalized, input: ContactInput): Promise<Normalized> {
    const fields = { ...n.fields };
    const current = contactStatus(existing);
    if (fields.status === "SUBSCRIBED" && (current === "UNSUBSCRIBED" || current === "BANNED")) delete fields.status;
    if (fields.status === undefined && isTransactionalPending(existing) && (input.source ?? "PUBLIC_API") !== "TRANSACTIONAL_EMAIL") {
      fields.status = (await this.unsubscribedAddress(workspaceId, n.emailLower)) ? "UNSUBSCRIBED" : "SUBSCRIBED";
    }
    return { ...n, fields };
  }

  /**
   * A batch's valid items with one read and one store write: which contacts exist, then
   * every insert and change in one transaction. When a concurrent writer got in between,
   * the items not written as planned go through the one-at-a-time path.
   */
  private async writeMany(workspaceId: string, items: Array<{ index: number; n: Normalized }>, inputs: ContactInput[]): Promise<Map<number, BatchItemResult>> {
    const stored = await this.repo.findManyByEmail(workspaceId, items.map(({ n }) => n.emailLower));
    const existing = new Map(stored.map((c) => [c.emailLower, c]));
    const results = new Map<number, BatchItemResult>();
    const writes: ContactWrite[] = [];
    const planned: Array<{ index: number; n: Normalized; inserted?: Contact }> = [];
    for (const { index, n } of items) {
      try {
        const current = existing.get(n.emailLower);
        if (!current) {
          const doc = await this.newContact(workspaceId, n, inputs[index]);
          writes.push({ insert: doc });
          planned.push({ index, n, inserted: doc });
          results.set(index, { index, ok: true, created: true, contact: doc });
          continue;
        }
        const change = this.changeOf(current, await this.upsertOnto(workspaceId, current, n, inputs[index]));
        results.set(index, { index, ok: true, created: false, contact: change ? changed(current, change) : current });
        if (change) {
          writes.push({ id: current._id, change, before: current });
          planned.push({ index, n });
        }
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results.set(index, { index, ok: false, created: false, error: err.toInit() });
      }
    }
    if (!writes.length || (await this.repo.upsertMany(workspaceId, writes))) return results;
    // Some writes did not land as planned: our inserts that did keep `created`; the rest are redone one by one.
    const now = new Map((await this.repo.findManyByEmail(workspaceId, planned.map(({ n }) => n.emailLower))).map((c) => [c.emailLower, c]));
    for (const { index, n, inserted } of planned) {
      if (inserted && now.get(n.emailLower)?._id === inserted._id) continue;
      try {
        const { contact, created } = await this.write(workspaceId, n, inputs[index]);
        results.set(index, { index, ok: true, created, contact });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results.set(index, { index, ok: false, created: false, error: err.toInit() });
      }
    }
    return results;
  }

  /** Applies fields to an existing contact, by id or by email (404 when there is none). */
  async update(workspaceId: string, input: ContactInput, contactId?: string): Promise<Contact> {
    requireWorkspaceId(workspaceId);
    let existing: Contact | null;
    let n: Normalized;
    const types = await this.properties.customTypes(workspaceId);
    if (contactId) {
      existing = await this.repo.findById(workspaceId, contactId);
      if (!existing) throw notFound("contact_not_found", `Contact ${contactId} not found`);
      if (input.email && input.email.trim().toLowerCase() !== existing.emailLower) {
        throw badRequest("invalid_contact", "email must be the contact's email (a contact's email cannot change)");
      }
      n = this.normalize({ ...input, email: existing.email }, types);
    } else {
      n = this.normalize(input, types);
      existing = await this.findByEmail(workspaceId, n.emailLower);
      if (!existing) throw notFound("contact_not_found", `Contact ${n.email} not found`);
    }
    const updated = await this.apply(existing, n);
    if (n.fields.status === "SUBSCRIBED") {
      // An explicit resubscribe lifts an unsubscribe (never a bounce or complaint).
      await this.suppressions.remove(scopedId(workspaceId, n.emailLower), "unsubscribed");
    }
    return updated;
  }

  /**
   * Many upserts, each validated and applied on its own; the results keep the input order.
   * With `allOrNothing` every item is validated first and nothing is written when one fails.
   */
  async batchUpsert(workspaceId: string, inputs: ContactInput[], opts: { allOrNothing?: boolean } = {}): Promise<BatchItemResult[]> {
    await this.workspaces.get(workspaceId);
    if (inputs.length > BATCH_MAX_ITEMS) throw badRequest("invalid_request", `At most ${BATCH_MAX_ITEMS} contacts per batch`);
    const types = await this.properties.customTypes(workspaceId);
    const seen = new Map<string, number>();
    const checked = inputs.map((input, index): { n?: Normalized; error?: AppErrorInit } => {
      try {
        const n = this.normalize(input, types);
        const first = seen.get(n.emailLower);
        if (first !== undefined) throw conflict("duplicate_contact", `Duplicate of item ${first} (${n.emailLower}) in the same batch`);
        seen.set(n.emailLower, index);
        return { n };
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return { error: err.toInit() };
      }
    });
    if (opts.allOrNothing && checked.some((c) => c.error)) {
      return checked.map((c, index) => ({ index, ok: false, created: false, error: c.error }));
    }
    const valid = checked.flatMap(({ n }, index) => (n ? [{ index, n }] : []));
    const written = await this.writeMany(workspaceId, valid, inputs);
    return checked.map(({ error }, index) => written.get(index) ?? { index, ok: false, created: false, error });
  }

  async get(workspaceId: string, email: string): Promise<Contact> {
    const doc = await this.findOne(workspaceId, email);
    if (!doc) throw notFound("contact_not_found", `Contact ${String(email).slice(0, 200)} not found`);
    return doc;
  }

  /** The contact with this address, or null (a malformed address is a 400). */
  async findOne(workspaceId: string, email: string): Promise<Contact | null> {
    requireWorkspaceId(workspaceId);
    const box = parseMailbox(email);
    if (!box || box.name) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    return this.findByEmail(workspaceId, box.address.toLowerCase());
  }

  async getById(workspaceId: string, id: string): Promise<Contact> {
    const doc = await this.repo.findById(requireWorkspaceId(workspaceId), id);
    if (!doc) throw notFound("contact_not_found", `Contact ${id} not found`);
    return doc;
  }

  /** Deletes by email, or by id when given; answers the contact as it was. */
  async delete(workspaceId: string, email: string, contactId?: string): Promise<Contact> {
    const doc = contactId ? await this.getById(workspaceId, contactId) : await this.get(workspaceId, email);
    await this.repo.delete(workspaceId, doc._id);
    return doc;
  }

  /** Cursor paging in id (creation) order: each page is one index range scan, whatever the offset. */
  async list(workspaceId: string, opts: ContactListOptions = {}): Promise<Page<Contact>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit);
    if (opts.cursor && !CONTACT_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const query = this.query(opts);
    const docs = await this.repo.page(workspaceId, { ...query, after: opts.cursor || undefined, limit: limit + 1, newestFirst: opts.newestFirst });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  /** Every matching contact, one page at a time: memory stays at one page. */
  async *stream(workspaceId: string, opts: { batchSize?: number; subscribedOnly?: boolean; filter?: ContactQuery["filter"] } = {}): AsyncGenerator<Contact[]> {
    requireWorkspaceId(workspaceId);
    const batchSize = checkListLimit(opts.batchSize, STREAM_MAX_BATCH, STREAM_DEFAULT_BATCH);
    const query = this.query(opts);
    let cursor: string | undefined;
    for (;;) {
      const items = await this.repo.page(workspaceId, { ...query, after: cursor, limit: batchSize });
      if (items.length) yield items;
      if (items.length < batchSize) return;
      cursor = items[items.length - 1]._id;
    }
  }

  async count(workspaceId: string, opts: ContactListOptions = {}): Promise<number> {
    return this.repo.count(requireWorkspaceId(workspaceId), this.query(opts));
  }

  private query(opts: ContactListOptions): ContactQuery {
    const query: ContactQuery = {};
    if (opts.subscribedOnly) query.status = "SUBSCRIBED";
    if (opts.status) {
      const status = parseContactStatus(opts.status);
      if (query.status && status !== query.status) throw badRequest("invalid_request", "subscribed_only asks for SUBSCRIBED contacts; status asks for another");
      query.status = status;
    }
    if (opts.search) {
      if (typeof opts.search !== "string" || opts.search.length > SEARCH_MAX) throw badRequest("invalid_request", `search must be at most ${SEARCH_MAX} characters`);
      query.search = opts.search.trim().toLowerCase();
    }
    if (opts.filter) query.filter = opts.filter;
    return query;
  }

  private findByEmail(workspaceId: string, emailLower: string): Promise<Contact | null> {
    return this.repo.findByEmail(workspaceId, emailLower);
  }

  private async unsubscribedAddress(workspaceId: string, emailLower: string): Promise<boolean> {
    return (await this.suppressions.find(scopedId(workspaceId, emailLower)))?.reason === "unsubscribed";
  }

  /** Inserts; null when the unique index says another writer created it first. */
  private async insert(workspaceId: string, n: Normalized, input: ContactInput): Promise<Contact | null> {
    const doc = await this.newContact(workspaceId, n, input);
    return (await this.repo.insert(doc)) ? doc : null;
  }

  /** The contact an upsert creates (an unsubscribed address is created UNSUBSCRIBED). */
  private async newContact(workspaceId: string, n: Normalized, input: ContactInput): Promise<Contact> {
    const at = this.now();
    const source = input.source ?? "PUBLIC_API";
    const wanted = n.fields.status ?? (source === "TRANSACTIONAL_EMAIL" ? "OPT_IN_PENDING" : "SUBSCRIBED");
    const status = wanted !== "UNSUBSCRIBED" && wanted !== "BANNED" && (await this.unsubscribedAddress(workspaceId, n.emailLower)) ? "UNSUBSCRIBED" : wanted;
    const createdAt = input.createdAt && !Number.isNaN(input.createdAt.getTime()) && input.createdAt <= at ? input.createdAt : at;
    const properties = { ...n.set };
    for (const [slug, { def, edit }] of Object.entries(n.edits)) properties[slug] = validatePropertyValue(slug, def, edit, []);
    const extras = Object.fromEntries(EXTRA_BUILT_INS.filter((k) => n.fields[k]).map((k) => [k, n.fields[k]]));
    const doc: Contact = {
      _id: newId("ctc"),
      workspaceId,
      email: n.email,
      emailLower: n.emailLower,
      firstName: n.fields.firstName ?? "",
      lastName: n.fields.lastName ?? "",
      timezone: n.fields.timezone ?? "",
      ...extras,
      status,
      source,
      properties,
      createdAt,
      updatedAt: at,
    };
    return doc;
  }

  /** Writes only what differs; an input that changes nothing writes nothing. */
  private async apply(existing: Contact, n: Normalized): Promise<Contact> {
    const change = this.changeOf(existing, n);
    if (!change) return existing;
    const updated = await this.repo.update(existing.workspaceId, existing._id, change, existing);
    if (!updated) throw notFound("contact_not_found", `Contact ${existing.email} not found`);
    return updated;
  }

  /** What an input changes on a stored contact; null when nothing. */
  private changeOf(existing: Contact, n: Normalized): ContactChange | null {
    const fields: Fields = {};
    for (const [k, v] of Object.entries(n.fields) as Array<[keyof Fields, string]>) {
      const stored = k === "status" ? contactStatus(existing) : (existing[k] ?? "");
      if (stored !== v) Object.assign(fields, { [k]: v });
    }
    const setProperties: Record<string, PropertyValue> = {};
    const wanted = { ...n.set };
    for (const [slug, { def, edit }] of Object.entries(n.edits)) wanted[slug] = validatePropertyValue(slug, def, edit, existing.properties?.[slug]);
    for (const [k, v] of Object.entries(wanted)) {
      if (JSON.stringify(existing.properties?.[k]) !== JSON.stringify(v)) setProperties[k] = v;
    }
    const unsetProperties = n.unset.filter((k) => existing.properties && k in existing.properties);
    if (!Object.keys(fields).length && !Object.keys(setProperties).length && !unsetProperties.length) return null;
    return { fields, setProperties, unsetProperties, updatedAt: this.now() };
  }
}

/** A stored contact as a change leaves it (what the store's update answers). */
function changed(existing: Contact, change: ContactChange): Contact {
  const properties = { ...existing.properties, ...change.setProperties };
  for (const slug of change.unsetProperties) delete properties[slug];
  return { ...existing, ...change.fields, properties, updatedAt: change.updatedAt };
}
