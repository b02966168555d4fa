import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { NATS_BINARY } from "../harness/nats.js";
import { freePort, waitForPort } from "../harness/ports.js";

export interface ClusterNode {
  name: string;
  port: number;
  url: string;
  /** SIGKILL: the node is lost, its data dir left as it was. */
  kill(): Promise<void>;
}

export interface NatsCluster {
  nodes: ClusterNode[];
  /** Every member, comma-separated: MAILROOM_NATS_URL of a clustered deployment. */
  url: string;
  stop(): Promise<void>;
}

/** Whether a nats-server binary is there to start (CI installs Debian's). */
export function natsServerAvailable(): boolean {
  return spawnSync(NATS_BINARY, ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * `size` nats-server processes with JetStream, clustered over loopback routes, each with its own
 * store dir and server name. Resolves once JetStream has a meta leader (streams can be made).
 */
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-nats-cluster-"));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort() })));
  const children: ChildProcess[] = [];
  const nodes = ports.map(({ client, cluster }, i): ClusterNode => {
    const name = `n${i + 1}`;
    const routes = ports.filter((_, j) => j !== i).map((p) => `nats://127.0.0.1:${p.cluster}`).join(",");
    const child = spawn(
      NATS_BINARY,
      ["-a", "127.0.0.1", "-p", String(client), "-n", name, "-js", "-sd", path.join(dir, name),
        "--cluster_name", "mailroom", "--cluster", `nats://127.0.0.1:${cluster}`, "--routes", routes],
      { stdio: "ignore" },
    );
    children.push(child);
    return {
      name,
      port: client,
      url: `nats://127.0.0.1:${client}`,
      kill: async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGKILL");
        await exited;
      },
    };
  });
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(nodes.map((n) => waitForPort(n.port)));
    await waitForMetaLeader(nodes.map((n) => n.url));
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes, url: nodes.map((n) => n.url).join(","), stop };
}

async function waitForMetaLeader(servers: string[], timeoutMs = 30_000): Promise<void> {
  const nc = await connect({ servers });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        await jsm.getAccountInfo();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the NATS cluster elected no JetStream leader within ${timeoutMs} ms: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}
