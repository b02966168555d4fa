/**
 * The SMTP sink the benchmarks send to: Postfix's smtp-sink when installed (Debian `postfix`;
 * a Node sink tops out near the sender's own rate), else the test harness's Node sink in a
 * process of its own (`MAILROOM_BENCH_SINK=node` forces it, to compare or where smtp-sink
 * misbehaves). Run as `tsx bench/sink.ts <port>` it is that Node sink.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { pathToFileURL } from "node:url";
import { freePort, waitForPort } from "../test/harness/ports.js";

export interface Sink {
  port: number;
  kind: string;
  pid?: number;
  stop(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const port = await freePort();
  const binary = process.env.MAILROOM_BENCH_SINK === "node" ? undefined : findSmtpSink();
  let child: ChildProcess;
  let kind: string;
  if (binary) {
    // -u: drop root privileges; backlog 1024.
    child = spawn(binary, [...(process.getuid?.() === 0 ? ["-u", "nobody"] : []), `127.0.0.1:${port}`, "1024"], { stdio: "ignore" });
    kind = `Postfix smtp-sink (${binary})`;
  } else {
    child = spawn(process.execPath, ["--import", "tsx", new URL(import.meta.url).pathname, String(port)], { stdio: "ignore" });
    kind = "Node smtp-server sink (test/harness, own process; install postfix for smtp-sink)";
  }
  await waitForPort(port, 20_000);
  return {
    port,
    kind,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
    },
  };
}

function findSmtpSink(): string | undefined {
  for (const candidate of ["/usr/sbin/smtp-sink", "/usr/bin/smtp-sink"]) {
    try {
      execFileSync("test", ["-x", candidate]);
      return candidate;
    } catch {
      // next
    }
  }
  try {
    return execFileSync("which", ["smtp-sink"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { startSmtpSink } = await import("../test/harness/smtp-sink.js");
  await startSmtpSink({ port: Number(process.argv[2]) });
}
