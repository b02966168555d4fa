import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startUnits, UNITS, type RunningSystem, type UnitName } from "../../deploy/processes.js";
import { freePort } from "./ports.js";
import { startNats, type NatsHandle } from "./nats.js";
import { startSmtpSink, type SmtpSink } from "./smtp-sink.js";
import { createTestDatabase, systemStore, type TestDatabase } from "./postgres.js";
import { registerForRunEnd } from "./run-registry.js";

export interface SystemOptions {
  /** The MAILROOM_BOOTSTRAP document (DESIGN.md §5); with `topology`, the placements name their own. */
  bootstrap?: unknown;
  /** Extra environment for every unit. */
  env?: Record<string, string>;
  units?: UnitName[];
  /** Start an SMTP sink and point MAILROOM_SMTP_URL at it (default true). */
  smtp?: boolean;
  /**
   * Run the units as containers run them (test/deploy): given where NATS, the SMTP sink and
   * the data are, returns each unit's own address, port and complete environment. The harness
   * then sets nothing that wires units together: no URLs, ports, bind addresses or NATS URL.
   */
  topology?: (infra: TopologyInfra) => Partial<Record<UnitName, UnitPlacement>>;
  /** Runs once the data dir exists, before any unit starts (e.g. mount a small tmpfs for one service's store). */
  prepareDataDir?: (dataDir: string) => Promise<void>;
  /**
   * Where the units keep their records: the embedded store in the data dir, or a PostgreSQL
   * database of the system's own (test/harness/postgres.ts). Default: the `postgres` project's
   * choice (MAILROOM_TEST_STORE), else embedded.
   */
  store?: "embedded" | "postgres";
  /**
   * An existing PostgreSQL database (createTestDatabase) to run on instead of a database of the
   * system's own, e.g. two systems sharing one (test/cluster/two-sets.test.ts): implies `store:
   * "postgres"`, and the system's stop leaves it for its creator to drop.
   */
  database?: TestDatabase;
}

export interface TopologyInfra {
  natsUrl: string;
  /** The system's PostgreSQL database, when it runs on one. */
  postgresUrl?: string;
  smtpUrl?: string;
  dataDir: string;
  secret: string;
}

/** Where one unit runs and the whole Mailroom environment it gets. */
export interface UnitPlacement {
  host: string;
  port: number;
  env: Record<string, string>;
}

export interface TestSystem {
  gatewayUrl: string;
  publicUrl: string;
  secret: string;
  nats: NatsHandle;
  sink?: SmtpSink;
  dataDir: string;
  /** The system's PostgreSQL database when it runs on PostgreSQL. */
  database?: TestDatabase;
  ports: Record<UnitName, number>;
  processes: RunningSystem;
  /** The tail of one unit's log, for failure messages. */
  log(unit: UnitName, lines?: number): Promise<string>;
  /** fetch() against the gateway with a Bearer key and JSON body. */
  api(method: string, pathname: string, opts?: { key?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
  stop(): Promise<void>;
}

/**
 * The real system for end-to-end tests: nats-server on a free port, an SMTP sink, and every
 * service plus the gateway as real processes on free ports with their own data dir.
 */
export async function startSystem(opts: SystemOptions): Promise<TestSystem> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-e2e-"));
  const store = opts.database ? "postgres" : (opts.store ?? systemStore());
  const [nats, sink, ownDatabase] = await Promise.all([
    startNats(),
    opts.smtp === false ? undefined : startSmtpSink(),
    store === "postgres" && !opts.database ? createTestDatabase() : undefined,
  ]);
  if (ownDatabase) registerForRunEnd({ database: ownDatabase.name });
  const database = opts.database ?? ownDatabase;
  await opts.prepareDataDir?.(dataDir);
  const bootstrapFile = path.join(dataDir, "bootstrap.json");
  if (opts.bootstrap !== undefined) await writeFile(bootstrapFile, JSON.stringify(opts.bootstrap));
  const secret = "test-secret-0123456789abcdef";
  const placements = opts.topology?.({ natsUrl: nats.url, smtpUrl: sink?.url, dataDir, secret, postgresUrl: database?.url });
  const ports = {} as Record<UnitName, number>;
  for (const u of UNITS) ports[u.name] = placements?.[u.name]?.port ?? (await freePort());
  const gatewayUrl = `http://${placements?.gateway?.host ?? "127.0.0.1"}:${ports.gateway}`;
  const logDir = path.join(dataDir, "logs");
  const env: Record<string, string> = placements ? {
    // Settings only; the placements carry all the wiring.
    MAILROOM_LOG_LEVEL: "info",
    MAILROOM_RATE_LIMIT_PER_MINUTE: "100000",
    // The suites' webhook receivers listen on loopback: trusted here as under npm start.
    MAILROOM_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8,::1/128",
    ...opts.env,
  } : {
    MAILROOM_NATS_URL: nats.url,
    MAILROOM_DATA_DIR: dataDir,
    ...(opts.bootstrap !== undefined ? { MAILROOM_BOOTSTRAP: bootstrapFile } : {}),
    MAILROOM_PUBLIC_URL: gatewayUrl,
    MAILROOM_SECRET: secret,
    MAILROOM_LOG_LEVEL: "info",
    MAILROOM_RATE_LIMIT_PER_MINUTE: "100000",
    // The suites' webhook receivers listen on loopback: trusted here as under npm start.
    MAILROOM_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8,::1/128",
    ...(sink ? { MAILROOM_SMTP_URL: sink.url } : {}),
    // Small pools: PostgreSQL's 100 connections are shared by every system of the run (eleven units each).
    ...(database ? { MAILROOM_POSTGRES_URL: database.url, MAILROOM_POSTGRES_POOL: "3" } : {}),
    ...opts.env,
  };
  let processes: RunningSystem;
  try {
    const isolated = placements && Object.fromEntries(Object.entries(placements).map(([name, p]) => [name, { host: p.host, env: p.env }]));
    const units = opts.units ?? (placements && (Object.keys(placements) as UnitName[]));
    processes = await startUnits({ env, ports, output: { kind: "files", dir: logDir }, units, isolated });
  } catch (err) {
    await Promise.all([nats.stop(), sink?.stop(), ownDatabase?.drop()]);
    throw err;
  }
  const log = async (unit: UnitName, lines = 40) => {
    try {
      return (await readFile(path.join(logDir, `${unit}.log`), "utf8")).split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  };
  return {
    gatewayUrl,
    publicUrl: gatewayUrl,
    secret,
    nats,
    sink,
    dataDir,
    database,
    ports,
    processes,
    log,
    async api(method, pathname, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.key) headers.authorization = `Bearer ${o.key}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        headers["content-type"] ??= "application/json";
        body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      }
      const res = await fetch(gatewayUrl + pathname, { method, headers, body, redirect: "manual" });
      const text = await res.text();
      let parsed: unknown = text;
      try { parsed = JSON.parse(text); } catch { /* not JSON */ }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async stop() {
      await processes.stop();
      await Promise.all([nats.stop(), sink?.stop(), process.env.MAILROOM_KEEP_TEST_DATA ? undefined : ownDatabase?.drop()]);
      if (!process.env.MAILROOM_KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
