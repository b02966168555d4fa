import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export type UnitName = "directory" | "renderer" | "email" | "broadcast" | "delivery" | "gateway";

/** Every unit of the system; they start together and stop gateway-first. */
export const UNITS: { name: UnitName; entry: string; urlVar?: string; defaultPort: number }[] = [
  { name: "directory", entry: "services/directory/src/main.ts", urlVar: "MAILROOM_DIRECTORY_URL", defaultPort: 7101 },
  { name: "renderer", entry: "services/renderer/src/main.ts", urlVar: "MAILROOM_RENDERER_URL", defaultPort: 7104 },
  { name: "email", entry: "services/email/src/main.ts", urlVar: "MAILROOM_EMAIL_URL", defaultPort: 7102 },
  { name: "broadcast", entry: "services/broadcast/src/main.ts", urlVar: "MAILROOM_BROADCAST_URL", defaultPort: 7103 },
  { name: "delivery", entry: "services/delivery/src/main.ts", urlVar: "MAILROOM_DELIVERY_URL", defaultPort: 7105 },
  { name: "gateway", entry: "gateway/src/main.ts", defaultPort: 8080 },
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
  /** Where each unit's output goes: a line callback (launcher) or log files (tests). */
  output: { kind: "lines"; onLine: (unit: UnitName, line: string) => void } | { kind: "files"; dir: string };
  units?: UnitName[];
}

export interface RunningSystem {
  units: RunningUnit[];
  /** Restarts one unit with the same port and environment (crash tests). */
  restart(name: UnitName): Promise<void>;
  kill(name: UnitName, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/** Starts every unit as its own Node process (TypeScript through tsx) and waits until each listens. */
export async function startUnits(opts: StartOptions): Promise<RunningSystem> {
  const selected = availableUnits().filter((u) => !opts.units || opts.units.includes(u.name));
  const portOf = (name: UnitName) => opts.ports[name] ?? UNITS.find((u) => u.name === name)!.defaultPort;
  const baseEnv: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const u of UNITS) if (u.urlVar) baseEnv[u.urlVar] = `http://127.0.0.1:${portOf(u.name)}`;
  baseEnv.MAILROOM_HTTP_PORT = String(portOf("gateway"));
  if (opts.output.kind === "files") await mkdir(opts.output.dir, { recursive: true });

  const running: RunningUnit[] = [];
  const launch = async (unit: (typeof UNITS)[number]): Promise<RunningUnit> => {
    const port = portOf(unit.name);
    // MAILROOM_NODE_ARGS passes flags NODE_OPTIONS refuses (e.g. --cpu-prof) to every unit.
    const nodeArgs = (baseEnv.MAILROOM_NODE_ARGS ?? "").split(" ").filter(Boolean);
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join(REPO_ROOT, unit.entry)], {
      cwd: REPO_ROOT,
      env: { ...baseEnv, MAILROOM_SERVICE_PORT: String(port), MAILROOM_EXIT_WITH_PARENT: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      // Own process group: a terminal's Ctrl-C reaches only the launcher, which then stops
      // each unit once, in order (MAILROOM_EXIT_WITH_PARENT covers a launcher that dies).
      detached: true,
    });
    if (opts.output.kind === "files") {
      const log = createWriteStream(path.join(opts.output.dir, `${unit.name}.log`), { flags: "a" });
      child.stdout!.pipe(log);
      child.stderr!.pipe(log);
    } else {
      const onLine = opts.output.onLine;
      for (const stream of [child.stdout!, child.stderr!]) {
        readline.createInterface({ input: stream }).on("line", (line) => onLine(unit.name, line));
      }
    }
    await waitListening(port, child, unit.name);
    return { name: unit.name, port, child };
  };

  const stopUnit = async (u: RunningUnit, signal: NodeJS.Signals = "SIGTERM") => {
    if (u.child.exitCode !== null || u.child.signalCode !== null) return;
    const exited = new Promise((r) => u.child.once("exit", r));
    u.child.kill(signal);
    const timer = setTimeout(() => u.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    // Units find each other lazily by URL, so they can all boot at once (tsx start-up dominates).
    const started = await Promise.allSettled(selected.map((unit) => launch(unit)));
    for (const r of started) if (r.status === "fulfilled") running.push(r.value);
    const failed = started.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  } catch (err) {
    await Promise.all(running.map((u) => stopUnit(u)));
    throw err;
  }

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
      // Reverse order: the gateway stops taking requests before the services go.
      for (const u of [...running].reverse()) await stopUnit(u);
    },
  };
}

async function waitListening(port: number, child: ChildProcess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} before listening on ${port}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not listen on ${port} within ${timeoutMs} ms`);
}
