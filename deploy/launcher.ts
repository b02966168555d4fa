/**
 * `npm start`: runs the whole system on one machine as separate processes —
 * nats-server with JetStream (unless MAILROOM_NATS_URL is set), every service and the
 * gateway — prints the gateway URL and a development API key, and stops everything on Ctrl-C.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { ConfigError, loadConfig } from "@mailroom/kit/config.js";
import { loadAccountsSettings } from "../services/accounts/src/settings.js";
import { loadAutomationSettings } from "../services/automation/src/settings.js";
import { loadBroadcastSettings } from "../services/broadcast/src/settings.js";
import { loadDeliverySettings } from "../services/delivery/src/settings.js";
import { loadEmailSettings } from "../services/email/src/settings.js";
import { loadInboundSettings } from "../services/inbound/src/settings.js";
import { loadSubmissionSettings } from "../services/submission/src/settings.js";
import { loadWebhooksSettings } from "../services/webhooks/src/settings.js";
import { loadGatewaySettings } from "@mailroom/http/settings.js";
import { redactUrl } from "@mailroom/kit/logger.js";
import { loadTracingSettings } from "@mailroom/kit/tracing.js";
import { devBootstrap, devSystemSender, upgradedDevBootstrap } from "./dev-workspace.js";
import { startUnits, UNITS, type RunningSystem, type UnitEvent, type UnitName } from "./processes.js";
import { NatsServerMissingError, startLocalNats, stopStaleNats, type LocalNats } from "./nats-server.js";
import { DEFAULT_RESTART_POLICY, describeExit, RestartTracker, signalGroup } from "./supervisor.js";

/**
 * Webhooks may target loopback under `npm start` (a receiver on this machine is the usual way
 * to try them), unless the operator set MAILROOM_WEBHOOK_ALLOW_NETWORKS; production
 * deployments (deploy/docker-compose*.yml) trust no network (DESIGN.md §9.2).
 */
const DEV_WEBHOOK_NETWORKS = "127.0.0.0/8,::1/128";
const webhookNetworksSetByOperator = process.env.MAILROOM_WEBHOOK_ALLOW_NETWORKS !== undefined;
if (!webhookNetworksSetByOperator) process.env.MAILROOM_WEBHOOK_ALLOW_NETWORKS = DEV_WEBHOOK_NETWORKS;

/**
 * With the development workspace (no MAILROOM_BOOTSTRAP), console mail (magic links,
 * invitations) goes out from it as the system sender unless the user set one: signing in by
 * email works out of the box (captured in /dev/mail; links are printed in development too).
 */
const devSystemMail = !process.env.MAILROOM_BOOTSTRAP ? devSystemSender(process.env) : {};
Object.assign(process.env, devSystemMail);

/**
 * The shared config and every unit's settings, read here as each unit will read them, so
 * every bad value is reported at once, before anything starts (not as units crashing in a loop).
 */
const { config, deliverySettings, accountsSettings, inboundSettings, submissionSettings } = (() => {
  // A configuration mistake is the user's to fix: the messages, without a stack.
  const problems: string[] = [];
  const read = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.message.split("\n").slice(1));
      return undefined;
    }
  };
  const config = read(() => loadConfig());
  const settings = {
    gateway: config && read(() => loadGatewaySettings(config)),
    email: read(() => loadEmailSettings()),
    broadcast: read(() => loadBroadcastSettings()),
    webhooks: read(() => loadWebhooksSettings()),
    automation: read(() => loadAutomationSettings()),
    delivery: read(() => loadDeliverySettings()),
    accounts: read(() => loadAccountsSettings()),
    inbound: read(() => loadInboundSettings()),
    submission: read(() => loadSubmissionSettings()),
    tracing: read(() => loadTracingSettings()),
  };
  if (problems.length > 0 || !config || !settings.delivery || !settings.accounts || !settings.inbound || !settings.submission) {
    console.error(`invalid configuration:\n${[...new Set(problems)].join("\n")}`);
    process.exit(1);
  }
  return { config, deliverySettings: settings.delivery, accountsSettings: settings.accounts, inboundSettings: settings.inbound, submissionSettings: settings.submission };
})();
await mkdir(config.dataDir, { recursive: true });
/** <dataDir>/run/<unit>.pid and nats-server.pid: what runs now, for you and for tests. */
const runDir = path.join(config.dataDir, "run");
/** <dataDir>/logs/<unit>.log: each unit's output, also shown here. */
const logDir = path.join(config.dataDir, "logs");
await mkdir(runDir, { recursive: true });
const natsPidFile = path.join(runDir, "nats-server.pid");

const red = (text: string) => `\x1b[1;31m${text}\x1b[0m`;
const logPath = (unit: string) => path.join(logDir, `${unit}.log`);

let nats: LocalNats | undefined;
let system: RunningSystem | undefined;
let stopping = false;

/**
 * Last resort when the launcher exits: whatever path led here (a crash of this code,
 * process.exit anywhere), nats-server and the units' process groups are signalled, so
 * none is left holding the data directory. A clean shutdown has already stopped them.
 */
process.on("exit", () => {
  const running = (child?: ChildProcess) => child && child.exitCode === null && child.signalCode === null;
  if (running(nats?.child)) signalGroup(nats!.child.pid, "SIGTERM");
  for (const u of system?.units ?? []) if (running(u.child)) signalGroup(u.child.pid, "SIGTERM");
  rmSync(natsPidFile, { force: true });
  for (const u of UNITS) rmSync(path.join(runDir, `${u.name}.pid`), { force: true });
});

let firstSignal: { signal: NodeJS.Signals; at: number } | undefined;

/**
 * Stops every unit, then nats-server, then exits with `code`; a second signal exits at once.
 * Ctrl-C under `npm start` reaches the launcher twice (from the terminal, and forwarded by
 * npm): the same signal again within a second is that copy, not a second Ctrl-C.
 */
async function shutdown(code: number, signal?: NodeJS.Signals): Promise<never> {
  if (stopping) {
    if (signal && signal === firstSignal?.signal && Date.now() - firstSignal.at < 1_000) return new Promise<never>(() => {});
    process.exit(code || 1);
  }
  if (signal) firstSignal = { signal, at: Date.now() };
  stopping = true;
  console.log("\nstopping…");
  const forced = setTimeout(() => {
    console.error(red("units did not stop within 30 s; killing them"));
    process.exit(code || 1);
  }, 30_000);
  forced.unref();
  await system?.stop().catch((err) => console.error(`stopping units: ${(err as Error).message}`));
  await nats?.stop().catch((err) => console.error(`stopping nats-server: ${(err as Error).message}`));
  process.exit(code);
}

process.on("SIGINT", () => void shutdown(0, "SIGINT"));
process.on("SIGTERM", () => void shutdown(0, "SIGTERM"));
process.on("SIGHUP", () => void shutdown(0, "SIGHUP"));
// Under `npm start` (which execs the launcher, so npm's SIGTERM reaches it): never outlive npm,
// even one killed with SIGKILL. An orphan's parent changes (to init or a subreaper).
if (process.env.npm_lifecycle_event === "start") {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid === parent) return;
    console.error(red(`npm (pid ${parent}) is gone; stopping Mailroom`));
    void shutdown(0);
  }, 1_000).unref();
}
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (err) => {
    console.error(red(`launcher error: ${(err as Error)?.stack ?? err}`));
    void shutdown(1);
  });
}

let natsUrl = process.env.MAILROOM_NATS_URL;
if (!natsUrl) {
  const stale = await stopStaleNats(natsPidFile);
  if (stale) console.log(`stopped nats-server ${stale} left running by an earlier launcher`);
  try {
    nats = await superviseNats(path.join(config.dataDir, "nats"), await portOr(4222));
    natsUrl = nats.url;
  } catch (err) {
    console.error(err instanceof NatsServerMissingError ? err.message : `cannot start nats-server: ${(err as Error).message}`);
    process.exit(1);
  }
}

const bootstrap = await resolveBootstrap();
const ports: Partial<Record<UnitName, number>> = { gateway: config.httpPort };
// The SMTP ports are the operator's to choose (MAILROOM_INBOUND_PORT, MAILROOM_SUBMISSION_PORT); the others find each other by URL.
const preferredPort = (u: (typeof UNITS)[number]) => (u.name === "inbound" ? inboundSettings.port : u.name === "submission" ? submissionSettings.port : u.defaultPort);
for (const u of UNITS) if (u.name !== "gateway") ports[u.name] = await portOr(preferredPort(u));
// Its implicit-TLS port, only with a certificate (every unit inherits this environment).
const submissionTlsPort = submissionSettings.tls ? await portOr(submissionSettings.tlsPort) : undefined;
if (submissionTlsPort !== undefined) process.env.MAILROOM_SUBMISSION_TLS_PORT = String(submissionTlsPort);

const COLOURS = [36, 35, 32, 34, 33, 37, 96, 95, 92, 94, 93];
const colourOf = (unit: UnitName) => COLOURS[Math.max(0, UNITS.findIndex((u) => u.name === unit)) % COLOURS.length];
system = await startUnits({
  env: {
    MAILROOM_NATS_URL: natsUrl,
    MAILROOM_DATA_DIR: config.dataDir,
    MAILROOM_BOOTSTRAP: bootstrap.file,
    MAILROOM_PUBLIC_URL: config.publicUrl,
  },
  ports,
  output: {
    kind: "lines",
    logDir,
    onLine: (unit, line) => console.log(`\x1b[${colourOf(unit)}m${unit.padEnd(9)}\x1b[0m ${formatLine(line)}`),
  },
  supervise: { runDir, onEvent: reportUnitEvent },
}).catch(async (err) => {
  console.error(`failed to start: ${(err as Error).message} (unit logs in ${logDir})`);
  await nats?.stop();
  process.exit(1);
});

const gatewayUrl = `http://localhost:${config.httpPort}`;
// The admin CLI finds the accounts and audience units at their default URLs, or where
// MAILROOM_ACCOUNTS_URL and MAILROOM_AUDIENCE_URL say.
const cliUnits = UNITS.filter((u) => u.name === "accounts" || u.name === "audience");
const cliUrl = (u: (typeof UNITS)[number]) => `http://127.0.0.1:${ports[u.name]}`;
const movedCliUnits = cliUnits.filter((u) => ports[u.name] !== u.defaultPort);
const cliLine = movedCliUnits.length === 0
  ? `npx mailroom --help (${cliUnits.map((u) => `${u.name} at ${cliUrl(u)}`).join(", ")})`
  : `export ${movedCliUnits.map((u) => `${u.urlVar}=${cliUrl(u)}`).join(" ")} (default port taken), then npx mailroom --help`;
console.log(`
Mailroom is running.
  Gateway:      ${gatewayUrl}
  Console:      ${gatewayUrl}/console (${describeConsoleSignIn()})
  API key:      ${bootstrap.apiKey ?? "(see your MAILROOM_BOOTSTRAP file)"}
  NATS:         ${natsUrl}${nats ? " (started here, data in " + path.join(config.dataDir, "nats") + ")" : ""}
  Admin CLI:    ${cliLine}
  Inbound SMTP: 127.0.0.1:${ports.inbound} (bounces, complaints, mailto unsubscribes)
  SMTP submission (point an app that only speaks SMTP here):
    host ${submissionSettings.host ?? config.serviceHost}, port ${ports.submission}${submissionSettings.tls
      ? ` (STARTTLS), or port ${submissionTlsPort} (implicit TLS); certificate ${submissionSettings.tls.certFile}`
      : " (no TLS: set MAILROOM_SUBMISSION_TLS_CERT and _KEY for STARTTLS; without them AUTH is taken from loopback only)"}
    user: anything, password: the API key${bootstrap.apiKey ? ` (${bootstrap.apiKey})` : ""}; AUTH PLAIN or LOGIN
  Webhooks:     ${webhookNetworksSetByOperator
    ? `may target public addresses and MAILROOM_WEBHOOK_ALLOW_NETWORKS=${process.env.MAILROOM_WEBHOOK_ALLOW_NETWORKS}`
    : `may target loopback too (MAILROOM_WEBHOOK_ALLOW_NETWORKS=${DEV_WEBHOOK_NETWORKS}, a development default production does not have)`}
  Mail:         ${describeMail()}
  Data:         ${config.dataDir}${config.postgresUrl ? " (records in PostgreSQL)" : config.mongodbUrl ? " (records in MongoDB)" : ""}
  Logs, pids:   ${logDir}, ${runDir}

Try it:
  curl -s ${gatewayUrl}/v1/emails -H 'Authorization: Bearer ${bootstrap.apiKey ?? "<API_KEY>"}' \\
    -H 'Content-Type: application/json' \\
    -d '{"from":"${bootstrap.from}","to":"someone@example.org","subject":"Hello","html":"<p>Hello from Mailroom</p>"}'

Press Ctrl-C to stop.`);

/** How to sign in to the console: the API key, or an emailed link to a member (the dev workspace's owner). */
function describeConsoleSignIn(): string {
  const byKey = "sign in with the API key";
  if (!process.env.MAILROOM_SYSTEM_FROM) return `${byKey}; no email sign-in links: MAILROOM_SYSTEM_FROM is not set`;
  const member = bootstrap.owner ?? "a member of the workspace";
  const where = deliverySettings.mode === "capture" ? `the mail is captured at ${gatewayUrl}/dev/mail` : `mailed from ${process.env.MAILROOM_SYSTEM_FROM}`;
  return `${byKey}, or ask for an email link for ${member} (${where}; in development the link is also printed in this log)`;
}

/** Where mail goes: captured, or the delivery routes (relay URLs without their credentials). */
function describeMail(): string {
  if (deliverySettings.mode === "capture") return `captured locally — open ${gatewayUrl}/dev/mail`;
  const routes = deliverySettings.routes.map((r) => (r.kind === "relay" && r.url ? `${r.name} → ${redactUrl(r.url)}` : `${r.name} (${r.kind === "direct" ? "direct to MX" : r.kind})`));
  return `${deliverySettings.mode === "direct" ? "sent straight to recipients' MX hosts" : "relayed"}: ${routes.join(", ")}`;
}

/** Says loudly what happened to a unit; gives up (and stops everything) after repeated crashes. */
function reportUnitEvent(event: UnitEvent): void {
  switch (event.kind) {
    case "exited":
      console.error(red(`${event.unit} (pid ${event.pid}) exited unexpectedly with ${describeExit(event.code, event.signal)} after ${(event.uptimeMs / 1000).toFixed(1)} s; its log: ${logPath(event.unit)}`));
      break;
    case "restarting":
      console.error(red(`restarting ${event.unit} in ${(event.delayMs / 1000).toFixed(1)} s`));
      break;
    case "restarted":
      console.log(`${event.unit} restarted (pid ${event.pid})`);
      break;
    case "restart-failed":
      console.error(red(`${event.unit} did not come back: ${event.error.message}`));
      break;
    case "gave-up":
      console.error(red(
        `${event.unit} crashed ${event.crashes} times within ${event.windowMs / 1000} s; giving up and stopping Mailroom.\n` +
          `  See why in its log: ${logPath(event.unit)}`,
      ));
      void shutdown(1);
      break;
  }
}

/** nats-server, restarted on the same port and store (with the units' policy) when it dies. */
async function superviseNats(storeDir: string, port: number): Promise<LocalNats> {
  const tracker = new RestartTracker(DEFAULT_RESTART_POLICY);
  const start = async (): Promise<LocalNats> => {
    const started = await startLocalNats(storeDir, port, { onUnexpectedExit });
    tracker.started();
    writeFileSync(natsPidFile, `${started.child.pid}\n`);
    return started;
  };
  const onUnexpectedExit = (code: number | null, signal: NodeJS.Signals | null) => {
    if (stopping) return;
    console.error(red(`nats-server (pid ${nats?.child.pid}) exited unexpectedly with ${describeExit(code, signal)}; the units reconnect once it is back`));
    const decision = tracker.crashed();
    if (decision.giveUp) {
      console.error(red(`nats-server crashed ${decision.crashes} times within ${DEFAULT_RESTART_POLICY.windowMs / 1000} s; giving up and stopping Mailroom. Store: ${storeDir}`));
      void shutdown(1);
      return;
    }
    console.error(red(`restarting nats-server in ${(decision.delayMs / 1000).toFixed(1)} s`));
    setTimeout(() => {
      if (stopping) return;
      start().then(
        (fresh) => {
          nats = fresh;
          console.log(`nats-server restarted (pid ${fresh.child.pid})`);
        },
        (err: Error) => {
          console.error(red(`nats-server did not come back: ${err.message}`));
          onUnexpectedExit(null, null);
        },
      );
    }, decision.delayMs);
  };
  return start();
}

/** The default port when it is free, else any free port (services find each other by URL). */
async function portOr(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const srv = net.createServer();
      srv.once("error", () => resolve(undefined));
      srv.listen(port, "127.0.0.1", () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
  return (await tryListen(preferred)) ?? (await tryListen(0))!;
}

/**
 * Uses MAILROOM_BOOTSTRAP when set; otherwise writes (once) the development workspace
 * (deploy/dev-workspace.ts) with a random key into the data dir, so every start shows the
 * same working key. A dev workspace written by an earlier version gets the sample data too.
 */
async function resolveBootstrap(): Promise<{ file: string; apiKey?: string; from: string; owner?: string }> {
  let file = accountsSettings.bootstrapFile;
  if (!file) {
    file = path.join(config.dataDir, "dev-bootstrap.json");
    if (!existsSync(file)) {
      const doc = devBootstrap(`mr_dev_${randomBytes(18).toString("base64url")}`);
      await writeFile(file, JSON.stringify(doc, null, 2), { mode: 0o600 });
    } else {
      const upgraded = (() => {
        try {
          return upgradedDevBootstrap(JSON.parse(readFileSync(file, "utf8")));
        } catch {
          return undefined; // reported below
        }
      })();
      if (upgraded) {
        await writeFile(file, JSON.stringify(upgraded, null, 2), { mode: 0o600 });
        console.log(`added sample contacts, templates and acme.com to the development workspace (${file})`);
      }
    }
  }
  try {
    const doc = JSON.parse(await readFile(file, "utf8"));
    const ws = doc.workspaces?.[0];
    const from = ws?.verifiedEmails?.[0] ?? (ws?.verifiedDomains?.[0] ? `hello@${ws.verifiedDomains[0]}` : "you@example.com");
    return { file, apiKey: ws?.apiKeys?.[0]?.key, from, owner: ownerOf(ws?.members) };
  } catch (err) {
    // JSON.parse quotes the text around the error, which may be part of an API key.
    const reason = err instanceof SyntaxError ? "not valid JSON" : (err as Error).message;
    console.error(`cannot read MAILROOM_BOOTSTRAP ${file}: ${reason}`);
    process.exit(1);
  }
}

/** pino JSON lines become "level message {fields}"; anything else passes through. */
function formatLine(line: string): string {
  if (!line.startsWith("{")) return line;
  try {
    const { level, msg, time: _t, pid: _p, hostname: _h, name: _n, ...rest } = JSON.parse(line);
    const label = ({ 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" } as Record<number, string>)[level] ?? level;
    const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : "";
    return `${label} ${msg ?? ""}${extra}`;
  } catch {
    return line;
  }
}

/** A bootstrap workspace's owner: its member with role OWNER, else its first (which becomes OWNER). */
function ownerOf(members: unknown): string | undefined {
  if (!Array.isArray(members) || members.length === 0) return undefined;
  const emailOf = (m: unknown) => (typeof m === "string" ? m : typeof (m as { email?: unknown })?.email === "string" ? (m as { email: string }).email : undefined);
  const owner = members.find((m) => typeof m === "object" && (m as { role?: unknown })?.role === "OWNER") ?? members[0];
  return emailOf(owner);
}
