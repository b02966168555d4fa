import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { freePort, waitForPort } from "./ports.js";

export interface NatsHandle {
  url: string;
  port: number;
  /** The local server's process id (undefined in a container): benchmarks read its CPU time. */
  readonly pid?: number;
  /** The local server's data dir (undefined in a container). */
  readonly dir?: string;
  /** Kills the server (SIGKILL when `hard`), keeping its data dir for a restart. */
  kill(hard?: boolean): Promise<void>;
  /** Starts it again on the same port and data dir. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export const NATS_BINARY = process.env.MAILROOM_NATS_SERVER ?? "nats-server";

/**
 * A real nats-server with JetStream on a free port and its own temp data dir.
 * testcontainers is used when a container runtime exists; otherwise a local process.
 */
export async function startNats(): Promise<NatsHandle> {
  const fromContainer = await tryContainer();
  if (fromContainer) return fromContainer;
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-nats-"));
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn(NATS_BINARY, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: "ignore" });
    child.once("error", (err) => {
      throw new Error(`cannot start ${NATS_BINARY} (apt-get install -y nats-server): ${err.message}`);
    });
    await waitForPort(port);
  };
  const kill = async (hard = false) => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill(hard ? "SIGKILL" : "SIGTERM");
    await exited;
  };
  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get pid() { return child?.pid; },
    dir,
    kill,
    restart: launch,
    stop: async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function tryContainer(): Promise<NatsHandle | undefined> {
  if (process.env.MAILROOM_TEST_CONTAINERS === "0") return undefined;
  try {
    const { NatsContainer } = await import("@testcontainers/nats");
    const container = await new NatsContainer("nats:2.10").withJetStream().start();
    const port = container.getMappedPort(4222);
    const url = `nats://${container.getHost()}:${port}`;
    return {
      url,
      port,
      kill: async () => { await container.stop(); },
      restart: async () => { throw new Error("restart is not supported for containers"); },
      stop: async () => { await container.stop(); },
    };
  } catch {
    return undefined; // "Could not find a working container runtime strategy": use a local process
  }
}
