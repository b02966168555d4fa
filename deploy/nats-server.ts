import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import { signalGroup } from "./supervisor.js";

export class NatsServerMissingError extends Error {
  constructor(binary: string) {
    super(
      `nats-server was not found (looked for "${binary}"). Install it with:\n` +
        `  sudo apt-get update && sudo apt-get install -y nats-server\n` +
        `or point MAILROOM_NATS_URL at a running NATS server with JetStream enabled.`,
    );
  }
}

export function findNatsServer(binary = process.env.MAILROOM_NATS_SERVER ?? "nats-server"): string {
  const candidates = [binary, "/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"];
  for (const c of candidates) {
    const r = spawnSync(c, ["--version"], { stdio: "ignore" });
    if (r.status === 0) return c;
  }
  throw new NatsServerMissingError(binary);
}

export interface LocalNats {
  url: string;
  port: number;
  child: ChildProcess;
  /** Stops it (SIGTERM to its process group, SIGKILL after 10 s); not an unexpected exit. */
  stop(): Promise<void>;
}

export interface LocalNatsOptions {
  /** Called when nats-server exits without stop() (the launcher restarts it). */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

/** Runs nats-server with JetStream on loopback, storing streams under `storeDir`. */
export async function startLocalNats(storeDir: string, port: number, opts: LocalNatsOptions = {}): Promise<LocalNats> {
  const binary = findNatsServer();
  await mkdir(storeDir, { recursive: true });
  // Own process group, so Ctrl-C does not take NATS away while the services drain.
  const child = spawn(binary, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore", detached: true });
  let stopping = false;
  // An exit during start-up is reported by the throw below, not as an unexpected exit.
  let listening = false;
  child.once("exit", (code, signal) => {
    if (listening && !stopping) opts.onUnexpectedExit?.(code, signal);
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with code ${child.exitCode} (is port ${port} taken?)`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (open) {
      listening = true;
      break;
    }
    if (Date.now() > deadline) {
      stopping = true;
      signalGroup(child.pid, "SIGKILL");
      throw new Error("nats-server did not start within 15 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    child,
    stop: async () => {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      signalGroup(child.pid, "SIGTERM");
      const timer = setTimeout(() => signalGroup(child.pid, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Stops a nats-server left running by a launcher that was killed outright (kill -9 leaves
 * no chance to clean up): it would hold the store directory. Only a live process whose
 * command line is nats-server is touched, never whatever reuses a stale pid.
 */
export async function stopStaleNats(pidFile: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 1) return undefined;
    if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("nats-server")) return undefined;
  } catch {
    return undefined;
  }
  signalGroup(pid, "SIGTERM");
  for (let i = 0; i < 100 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (isAlive(pid)) signalGroup(pid, "SIGKILL");
  return pid;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
