import { connectClient } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { systemStore } from "./postgres.js";
import { registerForRunEnd } from "./run-registry.js";
import { SHARED_SYSTEMS_VARIABLE } from "./suites.js";
import { startSystem, type SystemOptions, type TestSystem } from "./system.js";

/**
 * A system for a suite that only needs one running: in the `shared` project (test/harness/suites.ts)
 * it is one a vitest worker already started for an earlier suite with the same settings, else a new
 * one kept for the suites after it; anywhere else, the suite's own (startSystem).
 *
 * What makes sharing safe: a worker runs one file at a time, so a shared system serves one suite
 * at a time; each suite works in the workspaces of its own bootstrap, loaded through the
 * accounts unit's LoadBootstrap as MAILROOM_BOOTSTRAP is at start (the accounts unit passes its
 * contacts and properties on to the audience unit); a suite whose workspace ids a
 * system already holds gets a fresh system; the SMTP sink is emptied and its faults cleared when
 * it changes hands. Every unit runs in a shared system (the suites differ in the units they
 * name, not in needing one absent). What a suite sets in `env` beyond SHARED_ENV, and `smtp`,
 * is part of the key: only suites with the same settings share.
 */
interface Shared {
  key: string;
  system: TestSystem;
  workspaces: Set<string>;
  lastUsed: number;
}

/** Systems one worker keeps at once (each is eleven processes and a nats-server). */
const KEPT = 2;
const kept: Shared[] = [];

/**
 * The settings every shared system runs with: the union of the test-speed settings the suites ask
 * for (quick polls, no caches to wait out, a short A/B minimum), none of which a suite's checks
 * depend on being otherwise. A suite's own `env` is laid over them; only what then differs from
 * these tells systems apart, so most suites meet in one system (or two: relay and capture).
 */
export const SHARED_ENV: Readonly<Record<string, string>> = {
  MAILROOM_LOG_LEVEL: "warn",
  MAILROOM_WEBHOOKS_POLL_MS: "50",
  MAILROOM_WEBHOOKS_ENDPOINT_CACHE_MS: "0",
  MAILROOM_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8,::1/128",
  MAILROOM_SCHEDULER_INTERVAL_MS: "200",
  MAILROOM_AUTH_CACHE_MS: "0",
  MAILROOM_AB_MIN_WAIT_SECONDS: "5",
  MAILROOM_EMAIL_CONTENT_RETENTION_HOURS: "1",
};

export async function useSystem(opts: SystemOptions): Promise<TestSystem> {
  const env = { ...SHARED_ENV, ...opts.env };
  // Outside the shared project the suite gets a system of its own, with the same settings.
  if (process.env[SHARED_SYSTEMS_VARIABLE] !== "1" || opts.topology || opts.prepareDataDir) return startSystem({ ...opts, env });
  const own = Object.entries(env).filter(([k, v]) => SHARED_ENV[k] !== v).sort(([a], [b]) => a.localeCompare(b));
  const key = JSON.stringify({ smtp: opts.smtp !== false, store: opts.store ?? systemStore(), env: own });
  const ids = workspaceIds(opts.bootstrap);
  let shared = kept.find((s) => s.key === key && !ids.some((id) => s.workspaces.has(id)));
  if (!shared) {
    while (kept.length >= KEPT) {
      kept.sort((a, b) => a.lastUsed - b.lastUsed);
      await kept.shift()!.system.stop();
    }
    const system = await startSystem({ env, smtp: opts.smtp });
    registerForRunEnd({ pid: system.nats.pid, command: "nats-server", dir: system.dataDir });
    if (system.database) registerForRunEnd({ database: system.database.name });
    if (system.nats.dir) registerForRunEnd({ dir: system.nats.dir });
    for (const unit of system.processes.units) registerForRunEnd({ pid: unit.child.pid, command: process.execPath });
    shared = { key, system, workspaces: new Set(), lastUsed: 0 };
    console.log(`shared system started in worker ${process.pid} (settings ${key})`);
    kept.push(shared);
  }
  shared.lastUsed = Date.now();
  if (opts.bootstrap !== undefined) {
    const accounts = connectClient(AccountsService, `http://127.0.0.1:${shared.system.ports.accounts}`);
    await accounts.loadBootstrap({ json: JSON.stringify(opts.bootstrap) });
  }
  for (const id of ids) shared.workspaces.add(id);
  shared.system.sink?.reset();
  const { system } = shared;
  // The suite's stop() hands the system back; the worker's end (or the run's) stops it.
  return { ...system, stop: async () => system.sink?.reset() };
}

function workspaceIds(bootstrap: unknown): string[] {
  const workspaces = (bootstrap as { workspaces?: Array<{ id?: unknown }> } | undefined)?.workspaces ?? [];
  return workspaces.map((w) => String(w.id));
}
