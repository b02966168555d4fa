import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { DEFAULT_RESTART_POLICY, RestartTracker, signalGroup, type RestartPolicy } from "./supervisor.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export type UnitName = "accounts" | "audience" | "renderer" | "email" | "broadcast" | "delivery" | "inbound" | "webhooks" | "automation" | "submission" | "gateway";

/**
 * V8 flags of the units every send passes through. A send allocates many short-lived
 * objects (request, protobuf messages, documents, job); under load the email service spent
 * 19–24 % of its CPU in GC with V8's 16 MB young generation and 11.6 % with 64 MB, while
 * interleaved `npm run bench api` runs of 64, 16 and 8 MB showed no difference in CPU per
 * send or p99 beyond the machine's noise. The broadcast benchmark (30,000 contacts, runs
 * alternated) does see it, and sees the memory: 64 MB — 0.81 ms of CPU per message over
 * every unit, delivery's anonymous peak 294–306 MB, the directory's (the unit since split in
 * accounts and audience) 271–333; 16 MB — 0.97–1.04 ms, 185 and 178–206 MB; 32 MB — 0.72–0.89
 * ms, 219–233 and 212–236 MB. So 32 MB: most of the GC saving at two thirds of the memory. MAILROOM_NODE_ARGS comes after these flags,
 * so `--max-semi-space-size=16` there overrides it. The young generation only grows that
 * far when allocation demands it.
 */
export const HOT_PATH_HEAP = ["--max-semi-space-size=32"];

/**
 * Units that stream bulk work (a CSV import of a million suppressions: the gateway parses,
 * the audience unit writes) promote a batch's worth of objects at every scavenge while holding
 * ~50 MB live, and V8 let the old generation grow to four times that before compacting:
 * 330-345 MB of anonymous memory each at 1,000,000 rows. A growth factor of 2 keeps them at
 * 226-232 MB for about 1 µs more CPU per row in the writer (of 17-18; measured on the directory
 * unit, the audience unit's predecessor), the same rate.
 */
export const BOUNDED_HEAP = [...HOT_PATH_HEAP, "--heap-growing-percent=100"];

/**
 * The inbound unit holds whole received messages (up to 35 MB) while it parses and stores
 * them: the old generation grows slowly as the bulk units', and the young one keeps V8's
 * default size (a 32 MB semi-space would reserve 64 MB more for a unit that is not a per-message hot path).
 */
export const LARGE_MESSAGE_HEAP = ["--heap-growing-percent=100"];

/**
 * Every unit of the system, one row each (add a unit by adding its row); they start
 * together and stop gateway-first. A unit gets its port in MAILROOM_SERVICE_PORT unless it
 * names another `portVar` (inbound, submission: their SMTP ports). A unit with both a
 * `portVar` and a `urlVar` (inbound) serves Connect besides: on StartOptions.servicePorts,
 * else the shared MAILROOM_SERVICE_PORT, else a free port; its `urlVar` points there.
 */
export const UNITS: { name: UnitName; entry: string; urlVar?: string; portVar?: string; defaultPort: number; nodeArgs?: string[] }[] = [
  { name: "accounts", entry: "services/accounts/src/main.ts", urlVar: "MAILROOM_ACCOUNTS_URL", defaultPort: 7101, nodeArgs: BOUNDED_HEAP },
  { name: "audience", entry: "services/audience/src/main.ts", urlVar: "MAILROOM_AUDIENCE_URL", defaultPort: 7109, nodeArgs: BOUNDED_HEAP },
  { name: "renderer", entry: "services/renderer/src/main.ts", urlVar: "MAILROOM_RENDERER_URL", defaultPort: 7104 },
  { name: "email", entry: "services/email/src/main.ts", urlVar: "MAILROOM_EMAIL_URL", defaultPort: 7102, nodeArgs: HOT_PATH_HEAP },
  { name: "broadcast", entry: "services/broadcast/src/main.ts", urlVar: "MAILROOM_BROADCAST_URL", defaultPort: 7103, nodeArgs: HOT_PATH_HEAP },
  { name: "delivery", entry: "services/delivery/src/main.ts", urlVar: "MAILROOM_DELIVERY_URL", defaultPort: 7105, nodeArgs: HOT_PATH_HEAP },
  { name: "inbound", entry: "services/inbound/src/main.ts", urlVar: "MAILROOM_INBOUND_URL", portVar: "MAILROOM_INBOUND_PORT", defaultPort: 2525, nodeArgs: LARGE_MESSAGE_HEAP },
  { name: "webhooks", entry: "services/webhooks/src/main.ts", urlVar: "MAILROOM_WEBHOOKS_URL", defaultPort: 7107 },
  { name: "automation", entry: "services/automation/src/main.ts", urlVar: "MAILROOM_AUTOMATION_URL", defaultPort: 7108 },
  // SMTP submission (its implicit-TLS port, when a certificate is configured: MAILROOM_SUBMISSION_TLS_PORT).
  { name: "submission", entry: "services/submission/src/main.ts", portVar: "MAILROOM_SUBMISSION_PORT", defaultPort: 2587 },
  { name: "gateway", entry: "gateway/src/main.ts", defaultPort: 8080, nodeArgs: BOUNDED_HEAP },
];

/** Units whose code exists in this checkout (the broadcast service lands with its own issue). */
export function availableUnits() {
  return UNITS.filter((u) => existsSync(path.join(REPO_ROOT, u.entry)));
}

export interface RunningUnit {
  name: UnitName;
  port: number;
  child: ChildProcess;
}

export interface StartOptions {
  /** Environment shared by every unit (MAILROOM_NATS_URL, MAILROOM_DATA_DIR, …). */
  env: Record<string, string | undefined>;
  /** Port per unit; the gateway's is MAILROOM_HTTP_PORT. */
  ports: Partial<Record<UnitName, number>>;
  /** The Connect port of a unit whose `ports` entry is its SMTP port (inbound); see UNITS. */
  servicePorts?: Partial<Record<UnitName, number>>;
  /**
   * Where each unit's output goes: a line callback (launcher; with `logDir`, also appended
   * to <logDir>/<unit>.log) or log files only (tests).
   */
  output: { kind: "lines"; onLine: (unit: UnitName, line: string) => void; logDir?: string } | { kind: "files"; dir: string };
  units?: UnitName[];
  /**
   * Units wired as containers are (test/deploy): each listens on its own address and gets its
   * own complete Mailroom environment, with nothing derived from `ports` and no MAILROOM_*
   * variable inherited from this process — the env alone says where the others are.
   */
  isolated?: Partial<Record<UnitName, { host: string; env: Record<string, string | undefined> }>>;
  /**
   * `npm start`: once every unit listens, a unit that dies is restarted with backoff
   * (deploy/supervisor.ts) and <runDir>/<unit>.pid always holds each unit's current pid.
   * Without it (tests), a unit that dies stays dead.
   */
  supervise?: { runDir: string; policy?: RestartPolicy; onEvent: (event: UnitEvent) => void };
}

/** What the supervisor reports about a unit. */
export type UnitEvent =
  | { kind: "exited"; unit: UnitName; pid: number; code: number | null; signal: NodeJS.Signals | null; uptimeMs: number }
  | { kind: "restarting"; unit: UnitName; delayMs: number }
  | { kind: "restarted"; unit: UnitName; pid: number }
  | { kind: "restart-failed"; unit: UnitName; error: Error }
  | { kind: "gave-up"; unit: UnitName; crashes: number; windowMs: number };

export interface RunningSystem {
  units: RunningUnit[];
  /** Restarts one unit with the same port and environment (crash tests). */
  restart(name: UnitName): Promise<void>;
  kill(name: UnitName, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/**
 * How a unit's code is loaded: its TypeScript through tsx, or, when MAILROOM_UNIT_BUNDLES names a
 * folder holding `<unit>.mjs` (the test harness builds one per run: test/harness/unit-bundles.ts),
 * that prebuilt module, which starts in a third of the CPU.
 */
function unitModule(unit: { name: UnitName; entry: string }): string[] {
  const bundles = process.env.MAILROOM_UNIT_BUNDLES;
  const bundle = bundles && path.join(bundles, `${unit.name}.mjs`);
  if (bundle && existsSync(bundle)) return [bundle];
  return ["--import", "tsx", path.join(REPO_ROOT, unit.entry)];
}

/** Starts every unit as its own Node process (see unitModule for how its code loads) and waits until each listens. */
export async function startUnits(opts: StartOptions): Promise<RunningSystem> {
  const selected = availableUnits().filter((u) => !opts.units || opts.units.includes(u.name));
  const portOf = (name: UnitName) => opts.ports[name] ?? UNITS.find((u) => u.name === name)!.defaultPort;
  const baseEnv: Record<string, string | undefined> = { ...process.env, ...opts.env };
  const servicePorts = new Map<UnitName, number>();
  for (const u of UNITS) {
    if (!u.urlVar || !u.portVar) continue;
    servicePorts.set(u.name, opts.servicePorts?.[u.name] ?? (Number(baseEnv.MAILROOM_SERVICE_PORT) || (await freeLoopbackPort())));
  }
  for (const u of UNITS) if (u.urlVar) baseEnv[u.urlVar] = `http://127.0.0.1:${servicePorts.get(u.name) ?? portOf(u.name)}`;
  baseEnv.MAILROOM_HTTP_PORT = String(portOf("gateway"));
  const logDir = opts.output.kind === "files" ? opts.output.dir : opts.output.logDir;
  if (logDir) await mkdir(logDir, { recursive: true });
  const supervise = opts.supervise;
  if (supervise) await mkdir(supervise.runDir, { recursive: true });
  const policy = supervise?.policy ?? DEFAULT_RESTART_POLICY;
  const pidFile = (name: UnitName) => path.join(supervise!.runDir, `${name}.pid`);
  /** Set once every unit listens: from then on a unit that exits by itself is restarted. */
  let supervising = false;
  let systemStopping = false;
  /** Units stopped on purpose (stop, kill, restart): their exit is no crash. */
  const stoppedOnPurpose = new Set<ChildProcess>();
  const trackers = new Map<UnitName, RestartTracker>();
  const restartTimers = new Set<NodeJS.Timeout>();
  const startedAt = new WeakMap<ChildProcess, number>();

  const running: RunningUnit[] = [];
  const replace = (fresh: RunningUnit) => {
    const i = running.findIndex((u) => u.name === fresh.name);
    if (i >= 0) running[i] = fresh;
    else running.push(fresh);
  };

  const onUnexpectedExit = (unit: (typeof UNITS)[number], child: ChildProcess, code: number | null, signal: NodeJS.Signals | null) => {
    if (supervise && child.pid && running.find((u) => u.name === unit.name)?.child === child) rmSync(pidFile(unit.name), { force: true });
    if (!supervise || !supervising || systemStopping || stoppedOnPurpose.has(child)) return;
    const tracker = trackers.get(unit.name)!;
    const uptimeMs = Date.now() - (startedAt.get(child) ?? Date.now());
    supervise.onEvent({ kind: "exited", unit: unit.name, pid: child.pid ?? 0, code, signal, uptimeMs });
    const decision = tracker.crashed();
    if (decision.giveUp) {
      supervise.onEvent({ kind: "gave-up", unit: unit.name, crashes: decision.crashes, windowMs: policy.windowMs });
      return;
    }
    supervise.onEvent({ kind: "restarting", unit: unit.name, delayMs: decision.delayMs });
    const timer = setTimeout(() => {
      restartTimers.delete(timer);
      if (systemStopping) return;
      launch(unit).then(
        (fresh) => supervise.onEvent({ kind: "restarted", unit: unit.name, pid: fresh.child.pid ?? 0 }),
        // Its exit (before listening) was already reported and counted as a crash.
        (error: Error) => supervise.onEvent({ kind: "restart-failed", unit: unit.name, error }),
      );
    }, decision.delayMs);
    restartTimers.add(timer);
  };

  const launch = async (unit: (typeof UNITS)[number]): Promise<RunningUnit> => {
    const port = portOf(unit.name);
    // MAILROOM_NODE_ARGS passes flags NODE_OPTIONS refuses (e.g. --cpu-prof) to every unit.
    const nodeArgs = (baseEnv.MAILROOM_NODE_ARGS ?? "").split(" ").filter(Boolean);
    const own = opts.isolated?.[unit.name];
    const env = own
      ? { ...withoutMailroomVariables(process.env), ...opts.env, ...own.env }
      : {
          ...baseEnv,
          ...(servicePorts.has(unit.name) ? { MAILROOM_SERVICE_PORT: String(servicePorts.get(unit.name)) } : {}),
          [unit.portVar ?? "MAILROOM_SERVICE_PORT"]: String(port),
        };
    const child = spawn(process.execPath, [...(unit.nodeArgs ?? []), ...nodeArgs, ...unitModule(unit)], {
      cwd: REPO_ROOT,
      env: { ...env, MAILROOM_EXIT_WITH_PARENT: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      // Own process group: a terminal's Ctrl-C reaches only the launcher, which then stops
      // each unit once, in order (MAILROOM_EXIT_WITH_PARENT covers a launcher that dies).
      detached: true,
    });
    startedAt.set(child, Date.now());
    if (supervise) {
      trackers.set(unit.name, trackers.get(unit.name) ?? new RestartTracker(policy));
      trackers.get(unit.name)!.started();
      if (child.pid) writeFileSync(pidFile(unit.name), `${child.pid}\n`);
    }
    const runningUnit: RunningUnit = { name: unit.name, port, child };
    // Registered at once, so a stop during start-up reaches this child too.
    if (supervising) replace(runningUnit);
    child.once("exit", (code, signal) => onUnexpectedExit(unit, child, code, signal));
    if (logDir) {
      const log = createWriteStream(path.join(logDir, `${unit.name}.log`), { flags: "a" });
      child.stdout!.pipe(log);
      child.stderr!.pipe(log);
    }
    if (opts.output.kind === "lines") {
      const onLine = opts.output.onLine;
      for (const stream of [child.stdout!, child.stderr!]) {
        readline.createInterface({ input: stream }).on("line", (line) => onLine(unit.name, line));
      }
    }
    try {
      await waitListening(port, own?.host ?? "127.0.0.1", child, unit.name);
    } catch (err) {
      // A unit that never listened is stopped too (it was left running, e.g. still loading a
      // bootstrap, before its parent watch had started).
      if (!supervising) await stopUnit(runningUnit);
      throw err;
    }
    return runningUnit;
  };

  const stopUnit = async (u: RunningUnit, signal: NodeJS.Signals = "SIGTERM") => {
    stoppedOnPurpose.add(u.child);
    if (u.child.exitCode !== null || u.child.signalCode !== null) return;
    const exited = new Promise((r) => u.child.once("exit", r));
    u.child.kill(signal);
    // The whole process group: anything the unit started goes with it.
    const timer = setTimeout(() => signalGroup(u.child.pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
    signalGroup(u.child.pid, "SIGKILL");
  };

  try {
    // Units find each other lazily by URL, so they can all boot at once (tsx start-up dominates).
    const started = await Promise.allSettled(selected.map((unit) => launch(unit)));
    for (const r of started) if (r.status === "fulfilled") running.push(r.value);
    const failed = started.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  } catch (err) {
    systemStopping = true;
    await Promise.all(running.map((u) => stopUnit(u)));
    throw err;
  }
  supervising = true;

  return {
    units: running,
    async restart(name) {
      const i = running.findIndex((u) => u.name === name);
      if (i < 0) throw new Error(`unit ${name} is not running`);
      await stopUnit(running[i]);
      running[i] = await launch(selected.find((u) => u.name === name)!);
    },
    async kill(name, signal = "SIGKILL") {
      const u = running.find((r) => r.name === name);
      if (u) await stopUnit(u, signal);
    },
    async stop() {
      systemStopping = true;
      for (const timer of restartTimers) clearTimeout(timer);
      // Reverse order: the gateway stops taking requests before the services go.
      for (const u of [...running].reverse()) await stopUnit(u);
      if (supervise) for (const u of running) rmSync(pidFile(u.name), { force: true });
    },
  };
}

/** A port nothing listens on now (the OS's choice). */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function withoutMailroomVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith("MAILROOM_")));
}

async function waitListening(port: number, host: string, child: ChildProcess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} before listening on ${host}:${port}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, host);
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not listen on ${host}:${port} within ${timeoutMs} ms`);
}
