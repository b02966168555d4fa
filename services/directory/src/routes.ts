import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import {
  DirectoryService,
  PropertyType as PbPropertyType,
  SuppressionReason as PbSuppressionReason,
  type ContactInput as PbContactInput,
  type ContactSchema,
  type DomainSchema,
  type TemplateSchema,
  type WorkspaceSchema,
  type ApiKeySchema,
  type SuppressionSchema,
  type WorkspaceFlags as PbWorkspaceFlags,
} from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { badRequest } from "../../kit/src/errors.js";
import type { Directory } from "./directory.js";
import type { ContactInput } from "./contacts.js";
import type { DomainView } from "./senders.js";
import type { ApiKeyDoc, ContactDoc, PropertyType, SuppressionDoc, SuppressionReason, TemplateDoc, WorkspaceDoc } from "./store.js";
import { parsePropertyType } from "./properties.js";
import { reserveSendable } from "./sendable.js";

/** Proto ⇄ domain mapping only; every rule lives in the domain modules. */

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

const PROPERTY_TYPE_TO_PB: Record<PropertyType, PbPropertyType> = {
  string: PbPropertyType.STRING,
  number: PbPropertyType.NUMBER,
  boolean: PbPropertyType.BOOLEAN,
  date: PbPropertyType.DATE,
};
const PROPERTY_TYPE_FROM_PB: Partial<Record<number, PropertyType>> = {
  [PbPropertyType.STRING]: "string",
  [PbPropertyType.NUMBER]: "number",
  [PbPropertyType.BOOLEAN]: "boolean",
  [PbPropertyType.DATE]: "date",
};
const REASON_TO_PB: Record<SuppressionReason, PbSuppressionReason> = {
  unsubscribed: PbSuppressionReason.UNSUBSCRIBED,
  hard_bounce: PbSuppressionReason.HARD_BOUNCE,
  complaint: PbSuppressionReason.COMPLAINT,
  manual: PbSuppressionReason.MANUAL,
};
const REASON_FROM_PB: Partial<Record<number, SuppressionReason>> = {
  [PbSuppressionReason.UNSPECIFIED]: "manual",
  [PbSuppressionReason.UNSUBSCRIBED]: "unsubscribed",
  [PbSuppressionReason.HARD_BOUNCE]: "hard_bounce",
  [PbSuppressionReason.COMPLAINT]: "complaint",
  [PbSuppressionReason.MANUAL]: "manual",
};

export function workspaceToPb(w: WorkspaceDoc): MessageInitShape<typeof WorkspaceSchema> {
  return {
    id: w._id,
    name: w.name,
    timezone: w.timezone,
    flags: { ...w.flags },
    monthlyLimit: BigInt(w.monthlyLimit),
    sendingAccountNew: w.sendingAccountNew,
    createdAt: ts(w.createdAt),
  };
}

function apiKeyToPb(k: ApiKeyDoc): MessageInitShape<typeof ApiKeySchema> {
  return { id: k._id, workspaceId: k.workspaceId, name: k.name, prefix: k.prefix, scopes: k.scopes, createdAt: ts(k.createdAt), revokedAt: ts(k.revokedAt) };
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

export function contactToPb(c: ContactDoc): MessageInitShape<typeof ContactSchema> {
  return {
    id: c._id,
    email: c.email,
    firstName: c.firstName,
    lastName: c.lastName,
    timezone: c.timezone,
    subscribed: c.subscribed,
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
    properties: input.properties,
  };
}

export function templateToPb(t: TemplateDoc): MessageInitShape<typeof TemplateSchema> {
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
  };
}

function suppressionToPb(s: SuppressionDoc): MessageInitShape<typeof SuppressionSchema> {
  return { email: s.emailLower, reason: REASON_TO_PB[s.reason], detail: s.detail, createdAt: ts(s.createdAt) };
}

const flagsFromPb = (f: PbWorkspaceFlags | undefined) =>
  f ? { broadcastEarlyAccess: f.broadcastEarlyAccess, emailApiAddon: f.emailApiAddon, verified: f.verified } : undefined;

function int64(value: bigint | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw badRequest("invalid_request", `${field} is out of range`);
  return Number(value);
}

export function directoryService(dir: Directory): ServiceImpl<typeof DirectoryService> {
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
    async listWorkspaces() {
      return { workspaces: (await dir.workspaces.list()).map(workspaceToPb) };
    },
    async loadBootstrap(req) {
      return { workspaceIds: await dir.bootstrap.loadJson(req.json) };
    },

    async createApiKey(req) {
      const { key, plain } = await dir.keys.create(req.workspaceId, { name: req.name, scopes: req.scopes, fixedKey: req.key });
      return { apiKey: apiKeyToPb(key), plainKey: plain };
    },
    async listApiKeys(req) {
      return { apiKeys: (await dir.keys.list(req.workspaceId)).map(apiKeyToPb) };
    },
    async revokeApiKey(req) {
      await dir.keys.revoke(req.workspaceId, req.keyId);
      return {};
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
      await dir.members.remove(req.workspaceId, req.email);
      return {};
    },
    async listMembers(req) {
      return { emails: await dir.members.list(req.workspaceId) };
    },

    async createContactProperty(req) {
      const p = await dir.properties.create(req.workspaceId, req.slug, PROPERTY_TYPE_FROM_PB[req.type] ?? parsePropertyType(PbPropertyType[req.type] ?? req.type));
      return { property: { slug: p.slug, type: PROPERTY_TYPE_TO_PB[p.type], builtIn: p.builtIn } };
    },
    async listContactProperties(req) {
      const list = await dir.properties.list(req.workspaceId);
      return { properties: list.map((p) => ({ slug: p.slug, type: PROPERTY_TYPE_TO_PB[p.type], builtIn: p.builtIn })) };
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
      const results = await dir.contacts.batchUpsert(req.workspaceId, req.contacts.map((c) => contactFromPb(c)));
      return { results };
    },
    async getContact(req) {
      const c = req.contactId ? await dir.contacts.getById(req.workspaceId, req.contactId) : await dir.contacts.get(req.workspaceId, req.email);
      return { contact: contactToPb(c) };
    },
    async updateContact(req) {
      return { contact: contactToPb(await dir.contacts.update(req.workspaceId, contactFromPb(req.contact))) };
    },
    async deleteContact(req) {
      await dir.contacts.delete(req.workspaceId, req.email);
      return {};
    },
    async listContacts(req) {
      const page = await dir.contacts.list(req.workspaceId, {
        limit: req.page?.limit,
        cursor: req.page?.cursor,
        subscribedOnly: req.subscribedOnly,
      });
      return { contacts: page.items.map(contactToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async *streamContacts(req) {
      for await (const page of dir.contacts.stream(req.workspaceId, { batchSize: req.batchSize, subscribedOnly: req.subscribedOnly })) {
        yield { contacts: page.map(contactToPb) };
      }
    },

    async addSuppression(req) {
      const reason = REASON_FROM_PB[req.reason];
      if (!reason) throw badRequest("invalid_request", `unknown suppression reason ${req.reason}`);
      await dir.suppressions.add(req.workspaceId, req.email, reason, req.detail);
      return {};
    },
    async removeSuppression(req) {
      await dir.suppressions.remove(req.workspaceId, req.email);
      return {};
    },
    async checkSuppression(req) {
      return { suppressed: (await dir.suppressions.check(req.workspaceId, req.emails)).map(suppressionToPb) };
    },
    async listSuppressions(req) {
      const page = await dir.suppressions.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { suppressions: page.items.map(suppressionToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },

    async createTemplate(req) {
      return { template: templateToPb(await dir.templates.create(req.workspaceId, templateFromPb(req.template))) };
    },
    async getTemplate(req) {
      return { template: templateToPb(await dir.templates.get(req.workspaceId, req.name)) };
    },
    async updateTemplate(req) {
      return { template: templateToPb(await dir.templates.update(req.workspaceId, templateFromPb(req.template))) };
    },
    async deleteTemplate(req) {
      await dir.templates.delete(req.workspaceId, req.name);
      return {};
    },
    async listTemplates(req) {
      const page = await dir.templates.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
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

function templateFromPb(t: { name: string; subject: string; html: string; text: string; previewText: string } | undefined) {
  if (!t) throw badRequest("invalid_request", "template is required");
  return { name: t.name, subject: t.subject, html: t.html, text: t.text, previewText: t.previewText };
}

export function directoryRoutes(dir: Directory) {
  return (router: ConnectRouter) => {
    router.service(DirectoryService, directoryService(dir));
  };
}
