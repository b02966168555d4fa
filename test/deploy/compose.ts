/**
 * Reads deploy/docker-compose.yml and turns its units into processes on one machine, the way
 * the containers would see the world: each unit gets the environment block compose gives it,
 * with service names resolved to that unit's own loopback address (127.0.0.0/8 all routes to
 * lo on Linux) and container paths resolved through its volumes. Nothing else wires the units.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { REPO_ROOT, type UnitName } from "../../deploy/processes.js";
import { freePort } from "../harness/ports.js";
import type { TopologyInfra, UnitPlacement } from "../harness/system.js";

export const COMPOSE_FILE = path.join(REPO_ROOT, "deploy/docker-compose.yml");

export interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  /** Started only when one of these profiles is asked for (`--profile`). */
  profiles?: string[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
}

export function readCompose(): ComposeFile {
  // Compose files use YAML 1.1 merge keys (`<<: *env`).
  return parse(readFileSync(COMPOSE_FILE, "utf8"), { merge: true }) as ComposeFile;
}

/** The address each unit's "container" has. */
export const UNIT_ADDRESSES: Partial<Record<UnitName, string>> = {
  accounts: "127.0.0.2",
  email: "127.0.0.3",
  renderer: "127.0.0.4",
  delivery: "127.0.0.5",
  gateway: "127.0.0.6",
  broadcast: "127.0.0.7",
  inbound: "127.0.0.8",
  webhooks: "127.0.0.9",
  submission: "127.0.0.10",
  automation: "127.0.0.11",
  audience: "127.0.0.12",
};

/** Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}` and `${VAR?error}`. */
export function interpolate(value: string, vars: Record<string, string | undefined>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (_all, name: string, colon: string, op: string, arg: string) => {
    const v = vars[name];
    const missing = colon ? !v : v === undefined;
    if (!missing) return v!;
    if (op === "?") throw new Error(`compose needs ${name}: ${arg}`);
    return op === "-" ? arg : "";
  });
}

/** The port a unit's own server listens on, as compose configures it. */
export function composePortOf(service: ComposeService): number {
  const env = service.environment ?? {};
  const port = Number(env.MAILROOM_SERVICE_PORT ?? env.MAILROOM_HTTP_PORT);
  if (!Number.isInteger(port) || port <= 0) throw new Error("a unit sets neither MAILROOM_SERVICE_PORT nor MAILROOM_HTTP_PORT");
  return port;
}

/** A free TCP port on one address (the test harness's per-worker allocator). */
export const freePortOn = (host: string): Promise<number> => freePort(host);

export interface ComposeTopology {
  /** Host port per compose endpoint `service:port` (several runs may share a machine, so not the compose ports). */
  ports: Map<string, number>;
  gatewayUrl: string;
  /** The harness's `topology` option. */
  placements(infra: TopologyInfra): Record<UnitName, UnitPlacement>;
}

/** Each compose unit on its own loopback address, given a free port there for its compose port. */
export async function composeTopology(compose: ComposeFile, units: UnitName[]): Promise<ComposeTopology> {
  const ports = new Map<string, number>();
  // The gateway's port is needed for MAILROOM_PUBLIC_URL even when it is not started.
  for (const unit of new Set<UnitName>([...units, "gateway"])) {
    const host = UNIT_ADDRESSES[unit]!;
    ports.set(`${unit}:${composePortOf(compose.services[unit])}`, await freePortOn(host));
  }
  const gatewayUrl = `http://${UNIT_ADDRESSES.gateway}:${ports.get(`gateway:${composePortOf(compose.services.gateway)}`)}`;

  const placements = (infra: TopologyInfra) => {
    const resolveHost = (hostname: string, port: string): { host: string; port: string } => {
      if (hostname === "nats") {
        const nats = new URL(infra.natsUrl);
        return { host: nats.hostname, port: nats.port };
      }
      const address = UNIT_ADDRESSES[hostname as UnitName];
      if (address) return { host: address, port: String(ports.get(`${hostname}:${port}`) ?? port) };
      throw new Error(`compose names a host the topology does not map: ${hostname}`);
    };

    const placementOf = (unit: UnitName): UnitPlacement => {
      const service = compose.services[unit];
      const address = UNIT_ADDRESSES[unit]!;
      const ownPort = composePortOf(service);
      // The container's filesystem: bind mounts come from the repository, the rest is its own.
      const root = path.join(infra.dataDir, "containers", unit);
      const binds = (service.volumes ?? [])
        .map((v) => v.split(":"))
        .filter(([source]) => source.startsWith(".") || source.startsWith("/"))
        .map(([source, target]) => ({ source: path.resolve(path.dirname(COMPOSE_FILE), source), target }));
      const containerPath = (p: string) => binds.find((b) => b.target === p)?.source ?? path.join(root, p);

      const vars = { MAILROOM_SECRET: infra.secret, MAILROOM_SMTP_URL: infra.smtpUrl, MAILROOM_PUBLIC_URL: gatewayUrl };
      const env: Record<string, string> = {};
      for (const [name, raw] of Object.entries(service.environment ?? {})) {
        // No MongoDB here. PostgreSQL is the harness's database for the system when it has one
        // (startSystem's `store: "postgres"`); without one, the embedded store under MAILROOM_DATA_DIR.
        if (name === "MAILROOM_MONGODB_URL") continue;
        if (name === "MAILROOM_POSTGRES_URL") {
          // Small pools: PostgreSQL's 100 connections are shared by every system of the test run.
          if (infra.postgresUrl) Object.assign(env, { [name]: infra.postgresUrl, MAILROOM_POSTGRES_POOL: "3" });
          continue;
        }
        let value = String(raw ?? "");
        // Substituted values are this machine's already (the SMTP sink, the gateway's URL).
        if (value.includes("${")) value = interpolate(value, vars);
        else if (value === "0.0.0.0") value = address; // all of this container's interfaces: here, only its own
        else if (value.startsWith("/")) value = containerPath(value);
        else if (/^[a-z]+:\/\//.test(value)) {
          const url = new URL(value);
          const to = resolveHost(url.hostname, url.port);
          url.hostname = to.host;
          url.port = to.port;
          value = url.toString().replace(/\/$/, "");
        }
        env[name] = value;
      }
      // The unit's own port, mapped like a container's published port.
      const port = ports.get(`${unit}:${ownPort}`)!;
      const portVar = service.environment?.MAILROOM_SERVICE_PORT !== undefined ? "MAILROOM_SERVICE_PORT" : "MAILROOM_HTTP_PORT";
      env[portVar] = String(port);
      return { host: address, port, env };
    };
    return Object.fromEntries(units.map((u) => [u, placementOf(u)])) as Record<UnitName, UnitPlacement>;
  };

  return { ports, gatewayUrl, placements };
}
