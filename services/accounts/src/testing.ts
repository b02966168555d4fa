import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import type { DkimKeyPair, TxtResolver } from "@mailroom/records/ports.js";
import { createAccounts, type Accounts, type AccountsDeps } from "./domain/accounts.js";
import type { SendingDns, SpfResult } from "./domain/direct-sending.js";
import { generateDkimKeyPair } from "./adapters/dns.js";
import { openAccountsStores } from "./adapters/store.js";
import { MemberStore } from "./adapters/member-store.js";
import { SessionStore, TeamTokenStore } from "./adapters/team-store.js";
import { AuditLogStore } from "./adapters/audit-log-store.js";
import { Team } from "./domain/team.js";
import { AuditLog } from "./domain/audit-log.js";

/** A resolver answering from a map (name → TXT records as chunk lists). */
export function mapResolver(records: Record<string, string[][]> = {}): TxtResolver & { records: Record<string, string[][]> } {
  return {
    records,
    async resolveTxt(name: string) {
      const found = records[name.toLowerCase()];
      if (!found) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: "ENOTFOUND" });
      return found;
    },
  };
}

/**
 * Direct-sending DNS answering from maps (address → PTR names, name → addresses, domain →
 * SPF result); anything absent is not found / "none".
 */
export function mapSendingDns(zone: { ptr?: Record<string, string[]>; hosts?: Record<string, string[]>; spf?: Record<string, SpfResult> } = {}): SendingDns {
  return {
    async reverse(address) {
      const names = zone.ptr?.[address];
      if (!names) throw Object.assign(new Error(`getHostByAddr ENOTFOUND ${address}`), { code: "ENOTFOUND" });
      return names;
    },
    addresses: async (name) => zone.hosts?.[name.toLowerCase()] ?? [],
    spf: async ({ sender }) => ({ result: zone.spf?.[sender.split("@")[1]] ?? "none" }),
  };
}

let sharedKey: Promise<DkimKeyPair> | undefined;
/**
 * One real RSA 2048 pair per test process, handed to every domain (generation takes about
 * a second); tests that need distinct keys pass generateDkimKeyPair themselves.
 */
export function pooledDkimKey(): Promise<DkimKeyPair> {
  sharedKey ??= generateDkimKeyPair();
  return sharedKey;
}

/** The secrets test stores seal DKIM keys with. */
export const TEST_SECRETS = { current: "directory-test-secret-0123456789" };

export type TestAccountsOptions = Partial<Omit<AccountsDeps, "repositories">>;

/** The accounts unit's use cases over `store`, with a map resolver, the pooled DKIM key and no audience unit unless told otherwise. */
export async function storeAccounts(store: Store, opts: TestAccountsOptions = {}): Promise<Accounts> {
  return createAccounts({
    repositories: await openAccountsStores(store, TEST_SECRETS),
    resolver: mapResolver(),
    sendingDns: mapSendingDns(),
    generateDkimKey: pooledDkimKey,
    contactBootstrap: { check: async () => {}, apply: async () => {} },
    ...opts,
  });
}

/** The accounts unit's use cases over a fresh in-memory store. */
export function memoryAccounts(opts: TestAccountsOptions = {}): Promise<Accounts & { store: Store }> {
  const store = openMemoryStore();
  return storeAccounts(store, opts).then((accounts) => ({ ...accounts, store }));
}

/** The team and the audit log over a test store (as main.ts wires them). */
export async function storeTeam(dir: { store: Store; workspaces: Accounts["workspaces"] }, opts: { now?: () => Date } = {}): Promise<{ team: Team; auditLog: AuditLog }> {
  const team = new Team({
    members: await MemberStore.open(dir.store),
    tokens: await TeamTokenStore.open(dir.store),
    sessions: await SessionStore.open(dir.store),
    workspaces: dir.workspaces,
    secrets: TEST_SECRETS,
    now: opts.now,
  });
  return { team, auditLog: new AuditLog(await AuditLogStore.open(dir.store)) };
}
