import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeDomain, normalizeEmail } from "@mailroom/records/address.js";
import { hashApiKey, KEY_SHAPE, checkScopes, type ApiKeys } from "./keys.js";
import type { Members } from "./members.js";
import { memberEmail, parseBootstrap, parseBootstrapJson, type BootstrapDocument, type BootstrapWorkspace } from "@mailroom/records/bootstrap-document.js";
import type { Senders } from "./senders.js";
import { validateTemplate, type Templates } from "./templates.js";
import { appErrorCode, requireTimeZone } from "@mailroom/records/validation.js";
import type { Workspaces } from "./workspaces.js";
import type { Workspace } from "@mailroom/records/model.js";

/** The audience unit's side of a bootstrap (ContactService.LoadContactBootstrap). */
export interface ContactBootstrapPort {
  /** Refuses (invalid_bootstrap) what the audience unit would not take; writes nothing. */
  check(doc: BootstrapDocument): Promise<void>;
  /** `workspaces`: the document's, as written (the audience unit writes contacts against them without asking back). */
  apply(doc: BootstrapDocument, workspaces: Workspace[]): Promise<void>;
}

/** The use cases a bootstrap document goes through (so it obeys the same rules as the API). */
export interface BootstrapDeps {
  workspaces: Workspaces;
  keys: ApiKeys;
  senders: Senders;
  members: Members;
  /** The audience unit's part: contact properties and contacts (checked with the rest, applied after the workspaces). */
  contacts: ContactBootstrapPort;
  templates: Templates;
}

/**
 * Loads workspaces declaratively and idempotently: the whole document is validated
 * before anything is written; then workspace settings are set to the declared values
 * and everything else is created when missing. Existing contacts and templates are left
 * as they are (a restart must not undo an unsubscribe or an edit), so loading the same
 * document twice changes nothing.
 */

export class Bootstrap {
  constructor(private readonly d: BootstrapDeps) {}

  async loadJson(json: string): Promise<string[]> {
    return this.apply(parseBootstrapJson(json));
  }

  async load(raw: unknown): Promise<string[]> {
    return this.apply(parseBootstrap(raw));
  }

  /** Checks the whole document (both units' parts) before anything is written, then writes the workspaces, then the contacts. */
  private async apply(doc: BootstrapDocument): Promise<string[]> {
    await this.validate(doc);
    await this.d.contacts.check(doc);
    for (const ws of doc.workspaces) await this.applyWorkspace(ws);
    await this.d.contacts.apply(doc, await Promise.all(doc.workspaces.map((w) => this.d.workspaces.get(w.id))));
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
      const names = new Set<string>();
      for (const t of ws.templates) {
        try { validateTemplate(t); } catch (e) { fail(e, `template ${t.name}`); }
        if (names.has(t.name)) throw badRequest("invalid_bootstrap", `bootstrap ${at(`template "${t.name}" is listed twice`)}`);
        names.add(t.name);
      }
    }
  }

  private async applyWorkspace(ws: BootstrapWorkspace): Promise<void> {
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
    for (const k of ws.apiKeys) await this.d.keys.ensure(ws.id, k.key, k.scopes ?? ["api_user"], k.name || undefined);
    for (const e of ws.verifiedEmails) await this.d.senders.markEmailVerified(ws.id, e);
    for (const d of ws.verifiedDomains) await this.d.senders.markDomainVerified(ws.id, d);
    for (const m of ws.members) await this.d.members.add(ws.id, memberEmail(m), typeof m === "string" ? undefined : m.role);
    for (const t of ws.templates) {
      await this.d.templates.create(ws.id, t).catch((err) => {
        if (appErrorCode(err) !== "template_exists") throw err;
      });
    }
  }
}
