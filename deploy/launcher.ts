/**
 * `npm start`: runs the whole system on one machine as separate processes —
 * nats-server with JetStream (unless MAILROOM_NATS_URL is set), every service and the
 * gateway — prints the gateway URL and a development API key, and stops everything on Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { loadConfig } from "../services/kit/src/config.js";
import { redactUrl } from "../services/kit/src/logger.js";
import { startUnits, UNITS, type UnitName } from "./processes.js";
import { NatsServerMissingError, startLocalNats, type LocalNats } from "./nats-server.js";

const config = loadConfig();
await mkdir(config.dataDir, { recursive: true });

let nats: LocalNats | undefined;
let natsUrl = process.env.MAILROOM_NATS_URL;
if (!natsUrl) {
  try {
    nats = await startLocalNats(path.join(config.dataDir, "nats"), await portOr(4222));
    natsUrl = nats.url;
  } catch (err) {
    console.error(err instanceof NatsServerMissingError ? err.message : `cannot start nats-server: ${(err as Error).message}`);
    process.exit(1);
  }
}

const bootstrap = await resolveBootstrap();
const ports: Partial<Record<UnitName, number>> = { gateway: config.httpPort };
for (const u of UNITS) if (u.name !== "gateway") ports[u.name] = await portOr(u.defaultPort);

const colours: Record<UnitName, number> = { directory: 36, renderer: 35, email: 32, broadcast: 34, delivery: 33, gateway: 37 };
const system = await startUnits({
  env: {
    MAILROOM_NATS_URL: natsUrl,
    MAILROOM_DATA_DIR: config.dataDir,
    MAILROOM_BOOTSTRAP: bootstrap.file,
    MAILROOM_PUBLIC_URL: config.publicUrl,
  },
  ports,
  output: { kind: "lines", onLine: (unit, line) => console.log(`\x1b[${colours[unit]}m${unit.padEnd(9)}\x1b[0m ${formatLine(line)}`) },
}).catch(async (err) => {
  console.error(`failed to start: ${(err as Error).message}`);
  await nats?.stop();
  process.exit(1);
});

const gatewayUrl = `http://localhost:${config.httpPort}`;
console.log(`
Mailroom is running.
  Gateway:      ${gatewayUrl}
  API key:      ${bootstrap.apiKey ?? "(see your MAILROOM_BOOTSTRAP file)"}
  NATS:         ${natsUrl}${nats ? " (started here, data in " + path.join(config.dataDir, "nats") + ")" : ""}
  Mail:         ${config.smtpUrl ? `relayed to ${redactUrl(config.smtpUrl)}` : `captured locally — open ${gatewayUrl}/dev/mail`}
  Data:         ${config.dataDir}${config.mongodbUrl ? " (records in MongoDB)" : ""}

Try it:
  curl -s ${gatewayUrl}/v1/emails -H 'Authorization: Bearer ${bootstrap.apiKey ?? "<API_KEY>"}' \\
    -H 'Content-Type: application/json' \\
    -d '{"from":"${bootstrap.from}","to":"someone@example.org","subject":"Hello","html":"<p>Hello from Mailroom</p>"}'

Press Ctrl-C to stop.`);

let stopping = false;
const shutdown = async () => {
  if (stopping) process.exit(1);
  stopping = true;
  console.log("\nstopping…");
  await system.stop();
  await nats?.stop();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());

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
 * Uses MAILROOM_BOOTSTRAP when set; otherwise writes (once) a development workspace with
 * a random key into the data dir, so every start shows the same working key.
 */
async function resolveBootstrap(): Promise<{ file: string; apiKey?: string; from: string }> {
  let file = config.bootstrapFile;
  if (!file) {
    file = path.join(config.dataDir, "dev-bootstrap.json");
    if (!existsSync(file)) {
      const doc = {
        workspaces: [{
          id: "ws_dev", name: "Development", timezone: "UTC",
          apiKeys: [{ key: `mr_dev_${randomBytes(18).toString("base64url")}`, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["example.com"], members: ["you@example.com"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 100000, sendingAccountNew: false,
          contactProperties: [], contacts: [], templates: [],
        }],
      };
      await writeFile(file, JSON.stringify(doc, null, 2), { mode: 0o600 });
    }
  }
  try {
    const doc = JSON.parse(await readFile(file, "utf8"));
    const ws = doc.workspaces?.[0];
    const from = ws?.verifiedEmails?.[0] ?? (ws?.verifiedDomains?.[0] ? `hello@${ws.verifiedDomains[0]}` : "you@example.com");
    return { file, apiKey: ws?.apiKeys?.[0]?.key, from };
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
