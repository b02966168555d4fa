import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import {
  ContactService,
  PropertyType as PbPropertyType,
  ContactStatus as PbContactStatus,
  ContactSource as PbContactSource,
  type ContactEventSchema,
  type ContactPropertySchema,
  type ContactInput as PbContactInput,
  type ContactSchema,
} from "@mailroom/proto/audience/v1/contacts_pb.js";
import { badRequest, toErrorInfo } from "@mailroom/kit/errors.js";
import { parseBootstrapJson } from "@mailroom/records/bootstrap-document.js";
import { workspaceFromPb } from "./adapters/accounts-client.js";
import type { Audience } from "./domain/audience.js";
import type { ContactInput } from "./domain/contacts.js";
import type { PropertyView } from "./domain/properties.js";
import {
  CONTACT_SOURCES, CONTACT_STATUSES, contactStatus,
  type Contact, type ContactEvent, type ContactSource, type ContactStatus, type PropertyType,
} from "@mailroom/records/model.js";
import { parsePropertyType } from "./domain/properties.js";
import { reserveSendable } from "./domain/sendable.js";
import { suppressionHandlers, suppressionToPb } from "./suppression-routes.js";

/** Proto ⇄ domain mapping only; every rule lives in the domain modules. */

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

const PROPERTY_TYPE_TO_PB: Record<PropertyType, PbPropertyType> = {
  string: PbPropertyType.STRING,
  number: PbPropertyType.NUMBER,
  boolean: PbPropertyType.BOOLEAN,
  date: PbPropertyType.DATE,
  select: PbPropertyType.SELECT,
  multi_select: PbPropertyType.MULTI_SELECT,
};

const PROPERTY_TYPE_FROM_PB: Partial<Record<number, PropertyType>> = {
  [PbPropertyType.STRING]: "string",
  [PbPropertyType.NUMBER]: "number",
  [PbPropertyType.BOOLEAN]: "boolean",
  [PbPropertyType.DATE]: "date",
  [PbPropertyType.SELECT]: "select",
  [PbPropertyType.MULTI_SELECT]: "multi_select",
};

/** Enum values are named like the domain's (CONTACT_STATUS_SUBSCRIBED = SUBSCRIBED). */
const statusToPb = (s: ContactStatus) => PbContactStatus[s];

const sourceToPb = (s: ContactSource | undefined) => PbContactSource[s ?? "PUBLIC_API"];

function statusFromPb(value: PbContactStatus | undefined): ContactStatus | undefined {
  if (!value) return undefined;
  const name = PbContactStatus[value];
  if (!(CONTACT_STATUSES as readonly string[]).includes(name)) throw badRequest("invalid_contact", `unknown contact status ${value}`);
  return name as ContactStatus;
}

function sourceFromPb(value: PbContactSource): ContactSource | undefined {
  if (!value) return undefined;
  const name = PbContactSource[value];
  if (!(CONTACT_SOURCES as readonly string[]).includes(name)) throw badRequest("invalid_contact", `unknown contact source ${value}`);
  return name as ContactSource;
}

const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

function propertyToPb(p: PropertyView): MessageInitShape<typeof ContactPropertySchema> {
  return {
    slug: p.slug, type: PROPERTY_TYPE_TO_PB[p.type], builtIn: p.builtIn, id: p.id, displayName: p.displayName, description: p.description,
    options: p.options ?? [], createdAt: ts(p.createdAt), updatedAt: ts(p.updatedAt),
  };
}

function eventToPb(e: ContactEvent): MessageInitShape<typeof ContactEventSchema> {
  return {
    id: e._id, workspaceId: e.workspaceId, contactId: e.contactId, email: e.email, name: e.name, properties: e.properties as JsonObject,
    timestamp: ts(e.timestamp), messageId: e.messageId, receivedAt: ts(e.receivedAt),
  };
}

export function contactToPb(c: Contact): MessageInitShape<typeof ContactSchema> {
  return {
    id: c._id,
    email: c.email,
    firstName: c.firstName,
    lastName: c.lastName,
    timezone: c.timezone,
    subscribed: contactStatus(c) === "SUBSCRIBED",
    status: statusToPb(contactStatus(c)),
    source: sourceToPb(c.source),
    workspaceId: c.workspaceId,
    avatarUrl: c.avatarUrl ?? "",
    city: c.city ?? "",
    language: c.language ?? "",
    phone: c.phone ?? "",
    birthday: c.birthday ?? "",
    countryCode: c.countryCode ?? "",
    properties: { ...(c.properties ?? {}) } as JsonObject,
    createdAt: ts(c.createdAt),
    updatedAt: ts(c.updatedAt),
  };
}

function contactFromPb(input: PbContactInput | undefined): ContactInput {
  if (!input) throw badRequest("invalid_request", "contact is required");
  return {
    email: input.email,
    firstName: input.firstName,
    lastName: input.lastName,
    timezone: input.timezone,
    subscribed: input.subscribed,
    status: statusFromPb(input.status),
    source: sourceFromPb(input.source),
    createdAt: dateOf(input.createdAt),
    properties: input.properties,
    textProperties: input.textProperties,
  };
}

/** Compiles a workspace's JSON filter (adapters/contact-filter.ts); without one, a filter is refused. */
export type FilterCompiler = (workspaceId: string, filter: unknown) => Promise<Record<string, unknown>>;

const noFilters: FilterCompiler = async () => {
  throw badRequest("invalid_filter", "filter: filters are not available here");
};

export function contactService(dir: Audience, compileFilter: FilterCompiler = noFilters): ServiceImpl<typeof ContactService> {
  return {
    async createContactProperty(req) {
      const p = await dir.properties.create(req.workspaceId, {
        slug: req.slug || undefined,
        type: PROPERTY_TYPE_FROM_PB[req.type] ?? parsePropertyType(PbPropertyType[req.type] ?? req.type),
        displayName: req.displayName || undefined,
        description: req.description || undefined,
        options: req.options,
      });
      return { property: propertyToPb(p) };
    },
    async listContactProperties(req) {
      return { properties: (await dir.properties.list(req.workspaceId)).map(propertyToPb) };
    },
    async updateContactProperty(req) {
      return { property: propertyToPb(await dir.properties.update(req.workspaceId, req.propertyId, { displayName: req.displayName, description: req.description })) };
    },
    async createContact(req) {
      return { contact: contactToPb(await dir.contacts.create(req.workspaceId, contactFromPb(req.contact))) };
    },
    async upsertContact(req) {
      const { contact, created } = await dir.contacts.upsert(req.workspaceId, contactFromPb(req.contact), {
        createMissingProperties: req.createMissingProperties,
      });
      return { contact: contactToPb(contact), created };
    },
    async batchUpsertContacts(req) {
      const results = await dir.contacts.batchUpsert(req.workspaceId, req.contacts.map((c) => contactFromPb(c)), { allOrNothing: req.allOrNothing });
      return { results: results.map((r) => ({ ...r, contact: r.contact && contactToPb(r.contact), error: r.error && toErrorInfo(r.error) })) };
    },
    async getContact(req) {
      const c = req.contactId ? await dir.contacts.getById(req.workspaceId, req.contactId) : await dir.contacts.get(req.workspaceId, req.email);
      return { contact: contactToPb(c) };
    },
    async updateContact(req) {
      return { contact: contactToPb(await dir.contacts.update(req.workspaceId, contactFromPb(req.contact), req.contactId || undefined)) };
    },
    async deleteContact(req) {
      if (req.erase) {
        const { contact, eventsErased } = await dir.erasure.eraseContact(req.workspaceId, req.email, req.contactId || undefined);
        return { contact: contactToPb(contact), eventsErased: BigInt(eventsErased) };
      }
      return { contact: contactToPb(await dir.contacts.delete(req.workspaceId, req.email, req.contactId || undefined)) };
    },
    async listContacts(req) {
      const query = {
        subscribedOnly: req.subscribedOnly,
        status: statusFromPb(req.status),
        search: req.search || undefined,
        filter: req.filter ? await compileFilter(req.workspaceId, req.filter) : undefined,
      };
      const page = await dir.contacts.list(req.workspaceId, { ...query, limit: req.page?.limit, cursor: req.page?.cursor, newestFirst: req.newestFirst });
      const totalCount = req.includeCount ? BigInt(await dir.contacts.count(req.workspaceId, query)) : undefined;
      return { contacts: page.items.map(contactToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore }, totalCount };
    },
    async *streamContacts(req) {
      const filter = req.filter ? await compileFilter(req.workspaceId, req.filter) : undefined;
      for await (const page of dir.contacts.stream(req.workspaceId, { batchSize: req.batchSize, subscribedOnly: req.subscribedOnly, filter })) {
        yield { contacts: page.map(contactToPb) };
      }
    },
    async recordContactEvents(req) {
      const results = await dir.events.record(req.workspaceId, req.events.map((e) => ({
        name: e.name,
        email: e.email,
        traits: e.traits,
        properties: e.properties,
        timestamp: e.timestamp || undefined,
        messageId: e.messageId || undefined,
      })));
      return {
        results: results.map((r) => ({
          index: r.index, messageId: r.messageId, status: r.status, error: r.error && toErrorInfo(r.error), event: r.event && eventToPb(r.event),
        })),
      };
    },
    async listContactEvents(req) {
      const page = await dir.events.list(req.workspaceId, req.contactId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { events: page.items.map(eventToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },

    // Suppression list: suppression-routes.ts.
    ...suppressionHandlers(dir),
    async reserveSendable(req) {
      const r = await reserveSendable(dir, req.workspaceId, req.recipients);
      return {
        suppressed: r.suppressed.map(suppressionToPb),
        granted: r.granted,
        reserved: BigInt(r.reserved),
        used: BigInt(r.used),
        limit: BigInt(r.limit),
        period: r.period,
      };
    },
    async loadContactBootstrap(req) {
      const doc = parseBootstrapJson(req.json);
      if (req.validateOnly) await dir.bootstrap.check(doc);
      else await dir.bootstrap.apply(doc, req.workspaces.map(workspaceFromPb));
      return { workspaceIds: doc.workspaces.map((w) => w.id) };
    },
  };
}

export function contactRoutes(audience: Audience, compileFilter?: FilterCompiler) {
  return (router: ConnectRouter) => {
    router.service(ContactService, contactService(audience, compileFilter));
  };
}
