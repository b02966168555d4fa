import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { DirectoryService, type DomainSchema, type WorkspaceSchema, type ApiKeySchema, type WorkspaceFlags as PbWorkspaceFlags } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { PropertyType as PbPropertyType, ContactStatus as PbContactStatus, ContactSource as PbContactSource, type ContactEventSchema, type ContactPropertySchema, type ContactInput as PbContactInput, type ContactSchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { type TemplateInput as PbTemplateInput, type TemplateSchema } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { badRequest, toErrorInfo } from "@mailroom/kit/errors.js";
import type { Directory } from "./domain/directory.js";
import type { Team } from "./domain/team.js";
import { appErrorCode } from "@mailroom/records/validation.js";
import type { ContactInput } from "./domain/contacts.js";
import type { PropertyView } from "./domain/properties.js";
import { roleOf } from "./domain/keys.js";
import { templateStatus, templateVersion } from "./domain/templates.js";
import type { DomainView } from "./domain/senders.js";
import {
  CONTACT_SOURCES, CONTACT_STATUSES, contactStatus,
  type ApiKey, type Contact, type ContactEvent, type ContactSource, type ContactStatus, type PropertyType, type Template, type Workspace,
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

export function workspaceToPb(w: Workspace): MessageInitShape<typeof WorkspaceSchema> {
  return {
    id: w._id,
    name: w.name,
    timezone: w.timezone,
    flags: { ...w.flags },
    monthlyLimit: BigInt(w.monthlyLimit),
    sendingAccountNew: w.sendingAccountNew,
    createdAt: ts(w.createdAt),
    sendingPaused: Boolean(w.sendingPaused),
    sendingPausedReason: w.sendingPaused?.reason ?? "",
    sendingPausedAt: ts(w.sendingPaused?.at),
    banned: Boolean(w.banned),
    bannedReason: w.banned?.reason ?? "",
    bannedAt: ts(w.banned?.at),
  };
}

function apiKeyToPb(k: ApiKey): MessageInitShape<typeof ApiKeySchema> {
  return {
    id: k._id, workspaceId: k.workspaceId, name: k.name, prefix: k.prefix, scopes: k.scopes, createdAt: ts(k.createdAt), revokedAt: ts(k.revokedAt),
    role: roleOf(k.scopes, Boolean(k.ownerMemberId)), updatedAt: ts(k.updatedAt ?? k.createdAt), ownerMemberId: k.ownerMemberId ?? "",
    lastUsedAt: ts(k.lastUsedAt),
  };
}

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

function domainToPb(d: DomainView): MessageInitShape<typeof DomainSchema> {
  return {
    domain: d.domain,
    verified: d.verified,
    dkimSelector: d.selector,
    dkimPublicKey: d.publicKey,
    records: d.records,
    verifiedAt: ts(d.verifiedAt),
    verificationError: d.verificationError,
    lastCheckedAt: ts(d.lastCheckedAt),
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

export function templateToPb(t: Template): MessageInitShape<typeof TemplateSchema> {
  return {
    id: t._id,
    name: t.name,
    subject: t.subject,
    html: t.html,
    text: t.text,
    previewText: t.previewText,
    variables: t.variables,
    createdAt: ts(t.createdAt),
    updatedAt: ts(t.updatedAt),
    fromEmail: t.fromEmail ?? "",
    fromName: t.fromName ?? "",
    replyTo: (t.replyTo ?? []).map((r) => ({ email: r.email, name: r.name ?? "" })),
    status: templateStatus(t),
    displayName: t.displayName ?? "",
    kind: t.kind ?? "template",
    format: t.format ?? "liquid",
    layout: t.layout ?? "",
    version: templateVersion(t),
    source: t.source ?? "",
    snippets: t.snippets ?? [],
    liquid: t.liquid ?? false,
  };
}

const flagsFromPb = (f: PbWorkspaceFlags | undefined) =>
  f ? { broadcastEarlyAccess: f.broadcastEarlyAccess, emailApiAddon: f.emailApiAddon, verified: f.verified } : undefined;

function int64(value: bigint | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw badRequest("invalid_request", `${field} is out of range`);
  return Number(value);
}

/** Compiles a workspace's JSON filter (adapters/contact-filter.ts); without one, a filter is refused. */
export type FilterCompiler = (workspaceId: string, filter: unknown) => Promise<Record<string, unknown>>;
const noFilters: FilterCompiler = async () => {
  throw badRequest("invalid_filter", "filter: filters are not available on this directory");
};

/**
 * `team`: when given, RemoveMember goes through it (the last-owner rule; the member's sessions
 * end at once).
 */
export function directoryService(dir: Directory, compileFilter: FilterCompiler = noFilters, team?: Team): ServiceImpl<typeof DirectoryService> {
  return {
    async authenticate(req) {
      return dir.keys.authenticate(req.apiKey, req.requiredScopes);
    },

    async createWorkspace(req) {
      const w = await dir.workspaces.create({
        id: req.id,
        name: req.name,
        timezone: req.timezone,
        flags: flagsFromPb(req.flags),
        // 0 on create means "not given": the default plan limit.
        monthlyLimit: req.monthlyLimit ? int64(req.monthlyLimit, "monthly_limit") : undefined,
        sendingAccountNew: req.sendingAccountNew,
      });
      return { workspace: workspaceToPb(w) };
    },
    async getWorkspace(req) {
      return { workspace: workspaceToPb(await dir.workspaces.get(req.workspaceId)) };
    },
    async updateWorkspace(req) {
      const w = await dir.workspaces.update(req.workspaceId, {
        name: req.name,
        timezone: req.timezone,
        flags: flagsFromPb(req.flags),
        monthlyLimit: int64(req.monthlyLimit, "monthly_limit"),
        sendingAccountNew: req.sendingAccountNew,
      });
      return { workspace: workspaceToPb(w) };
    },
    async setWorkspaceSendingPaused(req) {
      const { workspace, changed } = await dir.workspaces.setSendingPaused(req.workspaceId, req.paused, req.reason);
      return { workspace: workspaceToPb(workspace), changed };
    },
    async setWorkspaceBanned(req) {
      const { workspace, changed } = await dir.workspaces.setBanned(req.workspaceId, req.banned, req.reason);
      return { workspace: workspaceToPb(workspace), changed };
    },
    async listWorkspaces() {
      return { workspaces: (await dir.workspaces.list()).map(workspaceToPb) };
    },
    async loadBootstrap(req) {
      return { workspaceIds: await dir.bootstrap.loadJson(req.json) };
    },

    async createApiKey(req) {
      const { key, plain } = await dir.keys.create(req.workspaceId, { name: req.name, scopes: req.scopes, role: req.role || undefined, fixedKey: req.key, ownerMemberId: req.ownerMemberId || undefined });
      return { apiKey: apiKeyToPb(key), plainKey: plain };
    },
    async listApiKeys(req) {
      if (!req.limit && !req.startAt && !req.oldestFirst) return { apiKeys: (await dir.keys.list(req.workspaceId)).map(apiKeyToPb) };
      const page = await dir.keys.page(req.workspaceId, { limit: req.limit, newestFirst: !req.oldestFirst, startAt: dateOf(req.startAt) });
      return { apiKeys: page.items.map(apiKeyToPb), hasMore: page.hasMore, nextStartAt: ts(page.nextStartAt) };
    },
    async revokeApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.revoke(req.workspaceId, req.keyId)) };
    },
    async getApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.getActive(req.workspaceId, req.keyId)) };
    },
    async updateApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.update(req.workspaceId, req.keyId, { name: req.name, role: req.role })) };
    },

    async addVerifiedEmail(req) {
      const e = await dir.senders.addEmail(req.workspaceId, req.email, req.verified);
      return { email: e.email, verified: e.verified };
    },
    async addDomain(req) {
      return { domain: domainToPb(await dir.senders.addDomain(req.workspaceId, req.domain)) };
    },
    async getDomain(req) {
      return { domain: domainToPb(await dir.senders.getDomain(req.workspaceId, req.domain)) };
    },
    async verifyDomain(req) {
      return { domain: domainToPb(await dir.senders.verifyDomain(req.workspaceId, req.domain)) };
    },
    async checkDirectSending(req) {
      return dir.senders.checkDirectSending(req.workspaceId, req.domain, req.address, req.ehloName);
    },
    async listSenders(req) {
      const { emails, domains } = await dir.senders.list(req.workspaceId);
      return { emails: emails.map((e) => ({ email: e.email, verified: e.verified })), domains: domains.map(domainToPb) };
    },
    async markVerified(req) {
      if (req.target.case === "domain") await dir.senders.markDomainVerified(req.workspaceId, req.target.value);
      else if (req.target.case === "email") await dir.senders.markEmailVerified(req.workspaceId, req.target.value);
      else throw badRequest("invalid_request", "domain or email is required");
      return {};
    },
    async checkSender(req) {
      const r = await dir.senders.check(req.workspaceId, req.from);
      return { ...r, dkim: r.dkim };
    },

    async addMember(req) {
      await dir.members.add(req.workspaceId, req.email);
      return {};
    },
    async removeMember(req) {
      if (!team) {
        await dir.members.remove(req.workspaceId, req.email);
        return {};
      }
      const removed = await team.remove(req.workspaceId, req.email).catch((err: unknown) => {
        if (appErrorCode(err) !== "member_not_found") throw err; // removing a non-member changes nothing, as before
        return undefined;
      });
      return { memberId: removed?.publicId ?? "" };
    },
    async listMembers(req) {
      return { emails: await dir.members.list(req.workspaceId) };
    },

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

    async createTemplate(req) {
      return { template: templateToPb(await dir.templates.create(req.workspaceId, templateFromPb(req.template))) };
    },
    async getTemplate(req) {
      const t = req.templateId ? await dir.templates.getById(req.workspaceId, req.templateId) : await dir.templates.get(req.workspaceId, req.name);
      // Content the byte merge serves needs nothing more: no lookups on that send path.
      if (!req.withIncludes || !t.liquid) return { template: templateToPb(t) };
      const [includes, workspace] = await Promise.all([dir.templates.includes(req.workspaceId, t), dir.workspaces.get(req.workspaceId)]);
      return { template: templateToPb(t), includes: includes.map(templateToPb), timeZone: workspace.timezone };
    },
    async updateTemplate(req) {
      return { template: templateToPb(await dir.templates.update(req.workspaceId, templateFromPb(req.template))) };
    },
    async deleteTemplate(req) {
      await dir.templates.delete(req.workspaceId, req.name);
      return {};
    },
    async listTemplates(req) {
      const page = await dir.templates.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor, status: req.status || undefined, newestFirst: req.newestFirst, kind: req.kind || undefined });
      return { templates: page.items.map(templateToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },

    async reserveUsage(req) {
      const r = await dir.usage.reserve(req.workspaceId, int64(req.count, "count")!);
      return { granted: r.granted, used: BigInt(r.used), limit: BigInt(r.limit), period: r.period };
    },
    async releaseUsage(req) {
      await dir.usage.release(req.workspaceId, int64(req.count, "count")!, req.period);
      return {};
    },
    async getUsage(req) {
      const r = await dir.usage.get(req.workspaceId);
      return { used: BigInt(r.used), limit: BigInt(r.limit), period: r.period };
    },
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
  };
}

function templateFromPb(t: PbTemplateInput | undefined) {
  if (!t) throw badRequest("invalid_request", "template is required");
  return {
    name: t.name, subject: t.subject, html: t.html, text: t.text, previewText: t.previewText,
    displayName: t.displayName, fromEmail: t.fromEmail, fromName: t.fromName,
    replyTo: t.replyTo.map((r) => (r.name ? { email: r.email, name: r.name } : { email: r.email })), status: t.status || undefined,
    kind: t.kind || undefined, format: t.format || undefined, layout: t.layout,
  };
}

export function directoryRoutes(dir: Directory, compileFilter?: FilterCompiler, team?: Team) {
  return (router: ConnectRouter) => {
    router.service(DirectoryService, directoryService(dir, compileFilter, team));
  };
}
