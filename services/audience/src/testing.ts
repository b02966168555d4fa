/**
 * The accounts and audience units in one process over one store, wired to each other's use
 * cases in place of their Connect clients: what the directory was before the split, for tests
 * of everything that talks to both (the gateway, the console, the other units' adapters).
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import type { Accounts, AccountsDeps } from "../../accounts/src/domain/accounts.js";
import type { Team } from "../../accounts/src/domain/team.js";
import { TemplatePreviews } from "../../accounts/src/domain/template-previews.js";
import { accountsRoutes } from "../../accounts/src/routes.js";
import { templateRoutes } from "../../accounts/src/template-routes.js";
import { storeAccounts } from "../../accounts/src/testing.js";
import { createAudience, type Audience, type AudienceDeps } from "./domain/audience.js";
import { openAudienceStores } from "./adapters/store.js";
import { contactRoutes, type FilterCompiler } from "./contact-routes.js";

export { mapResolver, mapSendingDns, pooledDkimKey, storeTeam, TEST_SECRETS } from "../../accounts/src/testing.js";

export type TestDirectoryOptions = Partial<Omit<AccountsDeps, "repositories" | "contactBootstrap"> & Omit<AudienceDeps, "repositories" | "workspaces" | "usage">>;

/** Both units' use cases side by side (the accounts unit's bootstrap, usage and workspaces), their store, and each unit whole. */
export type TestDirectory = Accounts & Omit<Audience, "bootstrap" | "usage" | "workspaces"> & { store: Store; accounts: Accounts; audience: Audience };

/** Both units over the given store, with a map resolver and the pooled DKIM key unless told otherwise. */
export async function storeDirectory(store: Store, opts: TestDirectoryOptions = {}): Promise<TestDirectory> {
  let audience: Audience | undefined;
  const accounts = await storeAccounts(store, {
    ...opts,
    contactBootstrap: { check: (doc) => audience!.bootstrap.check(doc), apply: (doc, written) => audience!.bootstrap.apply(doc, written) },
  });
  audience = createAudience({
    repositories: await openAudienceStores(store),
    workspaces: accounts.workspaces,
    usage: accounts.usage,
    publishEvent: opts.publishEvent,
    publishChanges: opts.publishChanges,
    intendChanges: opts.intendChanges,
    now: opts.now,
  });
  return { ...audience, ...accounts, store, accounts, audience };
}

/** Both units over a fresh in-memory store, for unit tests. */
export function memoryDirectory(opts: TestDirectoryOptions = {}): Promise<TestDirectory> {
  return storeDirectory(openMemoryStore(), opts);
}

/**
 * AccountsService, TemplateService (stored templates, previews, versions) and ContactService
 * of a test directory on one router: one in-memory transport serves the clients of all three.
 */
export function directoryRoutes(dir: TestDirectory, compileFilter?: FilterCompiler, team?: Team) {
  return (router: ConnectRouter) => {
    accountsRoutes(dir.accounts, team)(router);
    templateRoutes(dir.templates, new TemplatePreviews(dir.templates, dir.contacts, dir.workspaces), dir.workspaces)(router);
    contactRoutes(dir.audience, compileFilter)(router);
  };
}

/** The collections of both units, for "nothing changed" assertions. */
const SNAPSHOT_COLLECTIONS = [
  "workspaces", "api_keys", "sender_emails", "domains", "members", "contact_properties", "contacts", "contact_events", "suppressions", "templates", "template_versions", "usage",
  "directory_event_outbox", "contact_engagement", "contact_engagement_totals", "contact_engagement_recent", "team_tokens", "sessions", "audit_log",
] as const;

/**
 * Every document of every collection of both units. A key's `lastUsedAt` is left out:
 * authenticating a call writes it (the caller's own bookkeeping, at most once a minute),
 * whatever the call then does.
 */
export async function snapshot(dir: { store: Store }): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of SNAPSHOT_COLLECTIONS) {
    const docs = await dir.store.collection(name).find({}, { sort: { _id: 1 } });
    out[name] = name === "api_keys" ? docs.map(({ lastUsedAt: _used, ...doc }) => doc) : docs;
  }
  return out;
}
