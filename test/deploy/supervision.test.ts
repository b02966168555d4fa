/**
 * `npm start` as a process manager: the launcher restarts a unit (or nats-server) that is
 * killed, says so, and on Ctrl-C leaves nothing running and the data directory free.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAlive, startLocalNats } from "../../deploy/nats-server.js";
import { availableUnits, REPO_ROOT } from "../../deploy/processes.js";
import { DEFAULT_RESTART_POLICY, RestartTracker, signalGroup } from "../../deploy/supervisor.js";
import { freePort } from "../harness/ports.js";

describe("restart policy", () => {
  it("backs off from 0.5 s doubling to 10 s, resets after 30 s up, gives up at 5 crashes in 60 s", () => {
    const tracker = new RestartTracker(DEFAULT_RESTART_POLICY);
    let now = 0;
    tracker.started(now);
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      now += 1_000;
      const d = tracker.crashed(now);
      if (d.giveUp) throw new Error("gave up too early");
      delays.push(d.delayMs);
      tracker.started(now);
    }
    expect(delays).toEqual([500, 1_000, 2_000, 4_000]);
    expect(tracker.crashed(now + 1_000)).toEqual({ giveUp: true, crashes: 5 });

    const steady = new RestartTracker(DEFAULT_RESTART_POLICY);
    now = 0;
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      steady.started(now);
      now += 16_000; // under the reset time, but few enough crashes per minute to go on
      const d = steady.crashed(now);
      if (d.giveUp) throw new Error("gave up on a slow crash loop");
      seen.push(d.delayMs);
    }
    expect(seen).toEqual([500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
    steady.started(now);
    expect(steady.crashed(now + 30_000)).toEqual({ giveUp: false, delayMs: 500 });
  });
});

const UNIT_NAMES = availableUnits().map((u) => u.name);

/** `npm start` in a fresh data dir on a free gateway port, as a user would run it. */
async function startLauncher(reuse?: { dataDir: string; httpPort: number }) {
  const dataDir = reuse?.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), "mailroom-launcher-")));
  const httpPort = reuse?.httpPort ?? (await freePort());
  // The units start from the run's prebuilt modules (test/harness/unit-bundles.ts) when there are
  // some: what is under test is the supervision, and it restarts units many times here.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => (!k.startsWith("MAILROOM_") || k === "MAILROOM_UNIT_BUNDLES") && k !== "NODE_ENV"));
  const child = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "deploy/launcher.ts")], {
    cwd: REPO_ROOT,
    env: { ...env, PATH: `${env.PATH}:/usr/sbin`, MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: String(httpPort), MAILROOM_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own group, so a failing test can take down everything it started.
    detached: true,
  });
  const launcher = {
    dataDir,
    httpPort,
    child,
    output: "",
    /** Every pid seen, for the "nothing left running" checks and the clean-up. */
    pids: new Set<number>(),
    pidOf(name: string): number | undefined {
      try {
        const pid = Number(readFileSync(path.join(dataDir, "run", `${name}.pid`), "utf8").trim()) || undefined;
        if (pid) launcher.pids.add(pid);
        return pid;
      } catch {
        return undefined;
      }
    },
    tail: () => launcher.output.slice(-6_000),
    async waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 90_000, allowExit = false): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value !== undefined && value !== false) return value;
        if (child.exitCode !== null && !allowExit) throw new Error(`the launcher exited (${child.exitCode}) while waiting for ${what}:\n${launcher.tail()}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; launcher output:\n${launcher.tail()}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    /** Kills a unit (or nats-server) with SIGKILL and waits for its replacement to listen. */
    async killAndWaitForRestart(name: string): Promise<{ pid: number; fresh: number }> {
      const pid = launcher.pidOf(name)!;
      process.kill(pid, "SIGKILL");
      const fresh = await launcher.waitFor(`${name} to be restarted`, () => {
        const now = launcher.pidOf(name);
        return now !== undefined && now !== pid && isAlive(now) ? now : undefined;
      });
      await launcher.waitFor(`${name} to report its restart`, () => launcher.output.includes(`${name} restarted (pid ${fresh})`) || undefined);
      return { pid, fresh };
    },
    async cleanUp() {
      if (child.exitCode === null) signalGroup(child.pid, "SIGKILL");
      for (const pid of launcher.pids) signalGroup(pid, "SIGKILL");
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  child.stdout!.on("data", (d) => (launcher.output += d));
  child.stderr!.on("data", (d) => (launcher.output += d));
  await launcher.waitFor("Mailroom is running", () => launcher.output.includes("Mailroom is running.") || undefined, 150_000);
  for (const name of [...UNIT_NAMES, "nats-server"]) launcher.pidOf(name);
  return launcher;
}
type Launcher = Awaited<ReturnType<typeof startLauncher>>;

describe("npm start under supervision", () => {
  let launcher: Launcher;

  async function sendStatus(): Promise<number> {
    const bootstrap = JSON.parse(readFileSync(path.join(launcher.dataDir, "dev-bootstrap.json"), "utf8"));
    try {
      const res = await fetch(`http://127.0.0.1:${launcher.httpPort}/v1/emails`, {
        method: "POST",
        headers: { authorization: `Bearer ${bootstrap.workspaces[0].apiKeys[0].key}`, "content-type": "application/json" },
        body: JSON.stringify({ from: "hello@example.com", to: "someone@example.org", subject: "Hi", html: "<p>Hi</p>" }),
        signal: AbortSignal.timeout(5_000),
      });
      await res.text();
      return res.status;
    } catch {
      return 0;
    }
  }

  beforeAll(async () => {
    launcher = await startLauncher();
  }, 180_000);
  afterAll(async () => launcher?.cleanUp());

  it("serves, and comes back within seconds after any unit or nats-server is killed with SIGKILL", async () => {
    for (const name of UNIT_NAMES) expect(launcher.pidOf(name), `${name}.pid`).toBeDefined();
    expect(await launcher.waitFor("a first 200", async () => ((await sendStatus()) === 200 ? 200 : undefined))).toBe(200);

    for (const name of [...UNIT_NAMES, "nats-server"]) {
      const killedAt = Date.now();
      const { pid, fresh } = await launcher.killAndWaitForRestart(name);
      await launcher.waitFor(`the API to answer 200 after ${name} was killed`, async () => ((await sendStatus()) === 200 ? true : undefined));
      const seconds = (Date.now() - killedAt) / 1000;
      console.log(`${name}: pid ${pid} killed, ${fresh} serving again after ${seconds.toFixed(1)} s`);
      expect(launcher.output).toMatch(new RegExp(`${name} \\(pid ${pid}\\) exited unexpectedly with signal SIGKILL`));
    }
  }, 600_000);

  it("on Ctrl-C stops every unit and nats-server and leaves the data directory usable", async () => {
    for (const name of [...UNIT_NAMES, "nats-server"]) launcher.pidOf(name);
    const exited = new Promise<number | null>((resolve) => launcher.child.once("exit", (code) => resolve(code)));
    process.kill(launcher.child.pid!, "SIGINT");
    expect(await exited).toBe(0);
    for (const pid of launcher.pids) expect(isAlive(pid), `pid ${pid} still running:\n${launcher.tail()}`).toBe(false);
    for (const name of [...UNIT_NAMES, "nats-server"]) {
      expect(existsSync(path.join(launcher.dataDir, "run", `${name}.pid`)), `${name}.pid left behind`).toBe(false);
    }

    // Nothing holds the JetStream store: a new nats-server starts on it.
    const again = await startLocalNats(path.join(launcher.dataDir, "nats"), await freePort());
    launcher.pids.add(again.child.pid!);
    await again.stop();
  }, 120_000);
});

describe("npm start giving up", () => {
  let launcher: Launcher;
  beforeAll(async () => {
    launcher = await startLauncher();
  }, 180_000);
  afterAll(async () => launcher?.cleanUp());

  it("stops everything and exits non-zero, naming the unit and its log, when a unit keeps crashing", async () => {
    const exited = new Promise<number | null>((resolve) => launcher.child.once("exit", (code) => resolve(code)));
    // Four crashes are restarted; the fifth within a minute is one too many.
    for (let i = 0; i < 4; i++) await launcher.killAndWaitForRestart("renderer");
    process.kill(launcher.pidOf("renderer")!, "SIGKILL");
    expect(await exited).toBe(1);
    expect(launcher.output).toContain("renderer crashed 5 times within 60 s; giving up and stopping Mailroom.");
    expect(launcher.output).toContain(`See why in its log: ${path.join(launcher.dataDir, "logs", "renderer.log")}`);
    for (const pid of launcher.pids) expect(isAlive(pid), `pid ${pid} still running:\n${launcher.tail()}`).toBe(false);
  }, 300_000);
});

describe("npm start after a launcher was killed outright", () => {
  const launchers: Launcher[] = [];
  afterAll(async () => {
    for (const l of launchers.reverse()) await l.cleanUp();
  });

  it("stops the nats-server the killed launcher left holding the data directory", async () => {
    const first = await startLauncher();
    launchers.push(first);
    const natsPid = first.pidOf("nats-server")!;
    const unitPids = UNIT_NAMES.map((name) => first.pidOf(name)!);
    // kill -9 leaves no chance to clean up: the units follow their parent, nats-server stays.
    process.kill(first.child.pid!, "SIGKILL");
    await first.waitFor("the units to follow the launcher", () => unitPids.every((pid) => !isAlive(pid)) || undefined, 60_000, true);
    expect(isAlive(natsPid)).toBe(true);

    const second = await startLauncher({ dataDir: first.dataDir, httpPort: first.httpPort });
    launchers.push(second);
    expect(second.output).toContain(`stopped nats-server ${natsPid} left running by an earlier launcher`);
    expect(isAlive(natsPid)).toBe(false);
    const exited = new Promise<number | null>((resolve) => second.child.once("exit", (code) => resolve(code)));
    process.kill(second.child.pid!, "SIGINT");
    expect(await exited).toBe(0);
    for (const pid of second.pids) expect(isAlive(pid), `pid ${pid} still running`).toBe(false);
  }, 300_000);
});
