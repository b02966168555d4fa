import { badRequest } from "@mailroom/kit/errors.js";
import type { BootstrapDocument } from "@mailroom/records/bootstrap-document.js";
import type { Workspace } from "@mailroom/records/model.js";
import type { Contacts } from "./contacts.js";
import { checkSlug, parsePropertyType, type ContactProperties, type PropertyDef } from "./properties.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";

/** The use cases a bootstrap writes through, over a given workspace lookup. */
export type BootstrapUseCases = (workspaces: WorkspaceLookup) => { properties: ContactProperties; contacts: Contacts };

/**
 * A bootstrap document's contact properties and contacts (DESIGN.md §5): the accounts unit
 * checks and writes the workspaces, keys, senders, members and templates, and hands the
 * document here (ContactService.LoadContactBootstrap) to check before anything is written and
 * to apply once the workspaces exist. Existing contacts are left as they are.
 */
export class ContactBootstrap {
  constructor(
    private readonly useCases: BootstrapUseCases,
    private readonly workspaces: WorkspaceLookup,
  ) {}

  async check(doc: BootstrapDocument): Promise<void> {
    const d = this.useCases(this.workspaces);
    for (const ws of doc.workspaces) {
      const fail = (err: unknown, where: string): never => {
        throw badRequest("invalid_bootstrap", `bootstrap workspace ${ws.id}: ${where}: ${(err as Error).message}`);
      };
      // A workspace not written yet has no properties here.
      const types = new Map<string, PropertyDef>(await d.properties.customTypes(ws.id));
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
        try { d.contacts.normalize({ ...c, source: "DASHBOARD" }, types); } catch (e) { fail(e, `contact ${c.email}`); }
      }
    }
  }

  /** `written`: the document's workspaces as the accounts unit wrote them (looked up there when absent). */
  async apply(doc: BootstrapDocument, written: Workspace[] = []): Promise<void> {
    const known = new Map(written.map((w) => [w._id, w]));
    const d = this.useCases({ get: async (id) => known.get(id) ?? this.workspaces.get(id) });
    for (const ws of doc.workspaces) {
      for (const p of ws.contactProperties) await d.properties.ensure(ws.id, p.slug, p.type);
      // Contacts go in by batches of 1,000 (one store write each): one create per contact took
      // over a minute for 10,000 on a busy machine. Existing contacts are left as they are.
      for (let i = 0; i < ws.contacts.length; i += 1_000) {
        const chunk = ws.contacts.slice(i, i + 1_000);
        const found = await Promise.all(chunk.map((c) => d.contacts.findOne(ws.id, c.email)));
        const missing = chunk.filter((_c, j) => !found[j]).map((c) => ({ ...c, source: "DASHBOARD" as const }));
        if (!missing.length) continue;
        for (const r of await d.contacts.batchUpsert(ws.id, missing)) {
          if (!r.ok && r.error?.code !== "contact_exists" && r.error?.code !== "duplicate_contact") {
            throw badRequest("invalid_bootstrap", `contact ${missing[r.index].email}: ${r.error?.message}`);
          }
        }
      }
    }
  }
}
