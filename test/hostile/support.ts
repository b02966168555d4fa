import { readFileSync } from "node:fs";
import { startSystem, type SystemOptions, type TestSystem } from "../harness/system.js";
import type { UnitName } from "../../deploy/processes.js";

/** `npm run test:hostile` sets HOSTILE_LONG=1: the same checks at full scale. */
export const LONG = process.env.HOSTILE_LONG === "1";
export const scale = <T>(short: T, long: T): T => (LONG ? long : short);

export const KEY_A = "mr_test_hostile_a_key_0001";
export const KEY_B = "mr_test_hostile_b_key_0001";
/**
 * A real key of workspace A without the api_user scope (admin only): every /v1 route must
 * answer 401. A key with an empty scope list cannot exist: the accounts unit reads it as api_user.
 */
export const KEY_NO_SCOPE = "mr_test_hostile_noscope_01";
/** The fuzzer's own workspace, so its debris never meets the isolation checks. */
export const KEY_FUZZ = "mr_test_hostile_fuzz_key_01";
export const WS_FUZZ = "ws_hostile_fuzz";
export const WS_A = "ws_hostile_a";
export const WS_B = "ws_hostile_b";
export const DOMAIN_A = "acme.test";
export const DOMAIN_B = "bravo.test";

const workspace = (id: string, key: string, domain: string, extra: Record<string, unknown> = {}) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key, scopes: ["api_user"] }],
  verifiedEmails: [], verifiedDomains: [domain], members: [`owner@${domain}`],
  flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
  monthlyLimit: 10_000_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }],
  ...extra,
});

/**
 * Workspaces A and B, and the fuzzer's. A holds the scope-less key; B holds `audience`
 * contacts for broadcasts (transactional sends may add contacts, so they go to A).
 */
export function hostileBootstrap(audience = 0) {
  const contacts = Array.from({ length: audience }, (_, i) => ({ email: `r${i}@audience.test`, firstName: `R${i}`, subscribed: true, properties: { plan: "pro" } }));
  const a = workspace(WS_A, KEY_A, DOMAIN_A);
  a.apiKeys.push({ key: KEY_NO_SCOPE, scopes: ["admin"] });
  return { workspaces: [a, workspace(WS_B, KEY_B, DOMAIN_B, { contacts }), workspace(WS_FUZZ, KEY_FUZZ, DOMAIN_A)] };
}

export const ALL_UNITS: UnitName[] = ["accounts", "audience", "renderer", "email", "broadcast", "delivery", "inbound", "webhooks", "automation", "gateway"];

/** Small retry delays so deferred mail comes back within a test. */
export const FAST_RETRY_ENV = {
  MAILROOM_DELIVERY_RETRY_BASE_MS: "200",
  MAILROOM_DELIVERY_RETRY_MAX_MS: "1000",
  MAILROOM_DELIVERY_MAX_ATTEMPTS: "30",
  MAILROOM_WEBHOOKS_RETRY_BASE_MS: "200",
};

export async function startHostileSystem(opts: Partial<SystemOptions> & { audience?: number } = {}): Promise<TestSystem> {
  return startSystem({
    bootstrap: hostileBootstrap(opts.audience ?? 0),
    units: ALL_UNITS,
    ...opts,
    env: { ...FAST_RETRY_ENV, ...opts.env },
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
}

/**
 * Resident memory of a process in bytes (/proc/<pid>/status): `rss` in all, `anon` the
 * process's own memory (heap, stacks) without file pages such as the LMDB store's map.
 */
export function memoryOf(pid: number): { rss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), anon: kb("RssAnon") };
}

export function memoryPerUnit(sys: TestSystem): Record<string, { rss: number; anon: number }> {
  const out: Record<string, { rss: number; anon: number }> = {};
  for (const u of sys.processes.units) if (u.child.pid && u.child.exitCode === null) out[u.name] = memoryOf(u.child.pid);
  return out;
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Rows for the summary table printed at the end of the run (test/hostile/summary-reporter.ts reads task meta). */
export type SummaryRows = Array<[string, string | number]>;
declare module "vitest" {
  interface TaskMeta {
    hostile?: SummaryRows;
  }
}
