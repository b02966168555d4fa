import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { createDirectory, type Directory, type DirectoryDeps } from "./domain/directory.js";
import type { DkimKeyPair, TxtResolver } from "@mailroom/records/ports.js";
import type { SendingDns, SpfResult } from "./domain/direct-sending.js";
import { generateDkimKeyPair } from "./adapters/dns.js";
import { DIRECTORY_COLLECTIONS, openStoreRepositories } from "./adapters/store.js";
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

/** The secrets test directories seal DKIM keys with. */
export const TEST_SECRETS = { current: "directory-test-secret-0123456789" };

export type TestDirectoryOptions = Partial<Omit<DirectoryDeps, "repositories">>;
export type TestDirectory = Directory & { store: Store };

/** A directory over the given store, with a map resolver and the pooled DKIM key unless told otherwise. */
export async function storeDirectory(store: Store, opts: TestDirectoryOptions = {}): Promise<TestDirectory> {
  const dir = createDirectory({
    repositories: await openStoreRepositories(store, TEST_SECRETS),
    resolver: mapResolver(),
    sendingDns: mapSendingDns(),
    generateDkimKey: pooledDkimKey,
    ...opts,
  });
  return { ...dir, store };
}

/** A directory over a fresh in-memory store, for unit tests. */
export function memoryDirectory(opts: TestDirectoryOptions = {}): Promise<TestDirectory> {
  return storeDirectory(openMemoryStore(), opts);
}

/**
 * Every document of every directory collection, for "nothing changed" assertions. A key's
 * `lastUsedAt` is left out: authenticating a call writes it (the caller's own bookkeeping,
 * at most once a minute), whatever the call then does.
 */
export async function snapshot(dir: { store: Store }): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const name of DIRECTORY_COLLECTIONS) {
    const docs = await dir.store.collection(name).find({}, { sort: { _id: 1 } });
    out[name] = name === "api_keys" ? docs.map(({ lastUsedAt: _used, ...doc }) => doc) : docs;
  }
  return out;
}

/** The team and the audit log over a test directory's store (as main.ts wires them). */
export async function storeTeam(dir: TestDirectory, opts: { now?: () => Date } = {}): Promise<{ team: Team; auditLog: AuditLog }> {
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
