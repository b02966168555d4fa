import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import net from "node:net";

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
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Runs nats-server with JetStream on loopback, storing streams under `storeDir`. */
export async function startLocalNats(storeDir: string, port: number): Promise<LocalNats> {
  const binary = findNatsServer();
  await mkdir(storeDir, { recursive: true });
  // Own process group, so Ctrl-C does not take NATS away while the services drain.
  const child = spawn(binary, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore", detached: true });
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with code ${child.exitCode} (is port ${port} taken?)`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (open) break;
    if (Date.now() > deadline) throw new Error("nats-server did not start within 15 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
