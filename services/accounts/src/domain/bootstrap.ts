import { z } from "zod";
import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeDomain, normalizeEmail } from "@mailroom/records/address.js";
import type { Contacts } from "./contacts.js";
import { hashApiKey, KEY_SHAPE, checkScopes, type ApiKeys } from "./keys.js";
import type { Members } from "./members.js";
import { checkSlug, parsePropertyType, type ContactProperties, type PropertyDef } from "./properties.js";
import type { Senders } from "./senders.js";
import { validateTemplate, type Templates } from "./templates.js";
import { appErrorCode, requireTimeZone } from "@mailroom/records/validation.js";
import type { Workspaces } from "./workspaces.js";

/** The MAILROOM_BOOTSTRAP document (DESIGN.md §5). */
const workspaceSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  timezone: z.string().optional(),
  // scopes omitted: ["api_user"]; an empty list gives the key no scope at all.
  apiKeys: z.array(z.object({ key: z.string(), scopes: z.array(z.string()).optional(), name: z.string().optional() })).default([]),
  verifiedEmails: z.array(z.string()).default([]),
  verifiedDomains: z.array(z.string()).default([]),
  // An address (an EDITOR; the workspace's first member is its OWNER) or { email, role }.
  members: z.array(z.union([z.string(), z.object({ email: z.string(), role: z.enum(["OWNER", "ADMIN", "EDITOR", "VIEWER"]).optional() })])).default([]),
  flags: z.object({
    broadcastEarlyAccess: z.boolean().optional(),
    emailApiAddon: z.boolean().optional(),
    verified: z.boolean().optional(),
  }).optional(),
  monthlyLimit: z.number().int().min(0).optional(),
  sendingAccountNew: z.boolean().optional(),
  contactProperties: z.array(z.object({ slug: z.string(), type: z.string() })).default([]),
  contacts: z.array(z.object({
    email: z.string(),
    firstName: z.string().optional(),
    lastName: z.string().optional(),
    timezone: z.string().optional(),
    status: z.string().optional(),
    /** Older documents: `subscribed: true/false` means status SUBSCRIBED / UNSUBSCRIBED (status wins). */
    subscribed: z.boolean().optional(),
    properties: z.record(z.string(), z.unknown()).optional(),
  })).default([]),
  templates: z.array(z.object({
    name: z.string(),
    subject: z.string(),
    html: z.string(),
    text: z.string().optional(),
    previewText: z.string().optional(),
    displayName: z.string().optional(),
    fromEmail: z.string().optional(),
    fromName: z.string().optional(),
    replyTo: z.array(z.object({ email: z.string(), name: z.string().optional() })).optional(),
  })).default([]),
});

export const bootstrapSchema = z.object({ workspaces: z.array(workspaceSchema) });
export type BootstrapDocument = z.infer<typeof bootstrapSchema>;
type BootstrapWorkspace = z.infer<typeof workspaceSchema>;

/** The use cases a bootstrap document goes through (so it obeys the same rules as the API). */
export interface BootstrapDeps {
  workspaces: Workspaces;
  keys: ApiKeys;
  senders: Senders;
  members: Members;
  properties: ContactProperties;
  contacts: Contacts;
  templates: Templates;
}

/**
 * Loads workspaces declaratively and idempotently: the whole document is validated
 * before anything is written; then workspace settings are set to the declared values
 * and everything else is created when missing. Existing contacts and templates are left
 * as they are (a restart must not undo an unsubscribe or an edit), so loading the same
 * document twice changes nothing.
 */
const memberEmail = (m: string | { email: string }): string => (typeof m === "string" ? m : m.email);

export class Bootstrap {
  constructor(private readonly d: BootstrapDeps) {}

  async loadJson(json: string): Promise<string[]> {
    let raw: unknown;
    try {
      raw = JSON.parse(json);
    } catch (err) {
      // V8's message quotes the text around the error, which may be an API key: keep only the position.
      const position = /position (\d+)/.exec((err as Error).message)?.[1];
      throw badRequest("invalid_bootstrap", `bootstrap is not valid JSON${position ? ` (at character ${position})` : ""}`);
    }
    return this.load(raw);
  }

  async load(raw: unknown): Promise<string[]> {
    const parsed = bootstrapSchema.safeParse(raw);
    if (!parsed.success) {
      const first = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
      throw badRequest("invalid_bootstrap", `bootstrap is invalid: ${first.join("; ")}`);
    }
    const doc = parsed.data;
    await this.validate(doc);
    for (const ws of doc.workspaces) await this.apply(ws);
    return doc.workspaces.map((w) => w.id);
  }

  private async validate(doc: BootstrapDocument): Promise<void> {
    const ids = new Set<string>();
    const keyOwners = new Map<string, string>();
    for (const ws of doc.workspaces) {
      const at = (what: string) => `workspace ${ws.id}: ${what}`;
      const fail = (err: unknown, where: string): never => {
        throw badRequest("invalid_bootstrap", `bootstrap ${at(where)}: ${(err as Error).message}`);
      };
      if (ids.has(ws.id)) throw badRequest("invalid_bootstrap", `bootstrap lists workspace ${ws.id} twice`);
      ids.add(ws.id);
      if (ws.timezone) { try { requireTimeZone(ws.timezone); } catch (e) { fail(e, "timezone"); } }
      for (const k of ws.apiKeys) {
        if (!KEY_SHAPE.test(k.key)) throw badRequest("invalid_bootstrap", `bootstrap ${at("an API key")} must be 8-256 characters of [A-Za-z0-9_-.~+/=]`);
        try { checkScopes(k.scopes ?? []); } catch (e) { fail(e, "apiKeys.scopes"); }
        const hash = hashApiKey(k.key);
        const owner = keyOwners.get(hash) ?? (await this.d.keys.ownerOf(k.key));
        if (owner && owner !== ws.id) throw badRequest("invalid_bootstrap", `bootstrap ${at("an API key")} already belongs to workspace ${owner}`);
        keyOwners.set(hash, ws.id);
      }
      for (const e of [...ws.verifiedEmails, ...ws.members.map(memberEmail)]) {
        if (!normalizeEmail(e)) throw badRequest("invalid_bootstrap", `bootstrap ${at(`"${e}" is not a valid email address`)}`);
      }
      for (const d of ws.verifiedDomains) {
        if (!normalizeDomain(d)) throw badRequest("invalid_bootstrap", `bootstrap ${at(`"${d}" is not a valid domain`)}`);
      }
      const types = new Map<string, PropertyDef>(await this.existingTypes(ws.id));
      for (const p of ws.contactProperties) {
        try {
          const slug = checkSlug(p.slug);
          const type = parsePropertyType(p.type);
          const had = types.get(slug)?.type;
          if (had && had !== type) throw badRequest("property_exists", `property "${slug}" exists with type ${had}`);
          types.set(slug, { type });
        } catch (e) { fail(e, `contactProperties.${p.slug}`); }
      }
      for (const c of ws.contacts) {
        try { this.d.contacts.normalize({ ...c, source: "DASHBOARD" }, types); } catch (e) { fail(e, `contact ${c.email}`); }
      }
      const names = new Set<string>();
      for (const t of ws.templates) {
        try { validateTemplate(t); } catch (e) { fail(e, `template ${t.name}`); }
        if (names.has(t.name)) throw badRequest("invalid_bootstrap", `bootstrap ${at(`template "${t.name}" is listed twice`)}`);
        names.add(t.name);
      }
    }
  }

  private async existingTypes(workspaceId: string): Promise<Map<string, PropertyDef>> {
    return (await this.d.workspaces.find(workspaceId)) ? this.d.properties.customTypes(workspaceId) : new Map();
  }

  private async apply(ws: BootstrapWorkspace): Promise<void> {
    const settings = {
      name: ws.name,
      timezone: ws.timezone,
      flags: ws.flags,
      monthlyLimit: ws.monthlyLimit,
      sendingAccountNew: ws.sendingAccountNew,
    };
    if (await this.d.workspaces.find(ws.id)) {
      await this.d.workspaces.update(ws.id, settings);
    } else {
      try {
        await this.d.workspaces.create({ id: ws.id, ...settings });
      } catch (err) {
        if (appErrorCode(err) !== "workspace_exists") throw err;
        await this.d.workspaces.update(ws.id, settings);
      }
    }
    for (const p of ws.contactProperties) await this.d.properties.ensure(ws.id, p.slug, p.type);
    for (const k of ws.apiKeys) await this.d.keys.ensure(ws.id, k.key, k.scopes ?? ["api_user"], k.name || undefined);
    for (const e of ws.verifiedEmails) await this.d.senders.markEmailVerified(ws.id, e);
    for (const d of ws.verifiedDomains) await this.d.senders.markDomainVerified(ws.id, d);
    for (const m of ws.members) await this.d.members.add(ws.id, memberEmail(m), typeof m === "string" ? undefined : m.role);
    // Contacts go in by batches of 1,000 (one store write each): one create per contact took
    // over a minute for 10,000 on a busy machine. Existing contacts are left as they are.
    for (let i = 0; i < ws.contacts.length; i += 1_000) {
      const chunk = ws.contacts.slice(i, i + 1_000);
      const found = await Promise.all(chunk.map((c) => this.d.contacts.findOne(ws.id, c.email)));
      const missing = chunk.filter((_c, j) => !found[j]).map((c) => ({ ...c, source: "DASHBOARD" as const }));
      if (!missing.length) continue;
      for (const r of await this.d.contacts.batchUpsert(ws.id, missing)) {
        if (!r.ok && r.error?.code !== "contact_exists" && r.error?.code !== "duplicate_contact") {
          throw badRequest("invalid_bootstrap", `contact ${missing[r.index].email}: ${r.error?.message}`);
        }
      }
    }
    for (const t of ws.templates) {
      await this.d.templates.create(ws.id, t).catch((err) => {
        if (appErrorCode(err) !== "template_exists") throw err;
      });
    }
  }
}
