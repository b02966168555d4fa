/**
 * API benchmark: sustained `POST /v1/emails` requests per second and p50/p99 latency at 64
 * concurrent keep-alive clients against the real system (gateway, accounts, audience,
 * renderer, email service, nats-server), beside a bare Node HTTP server that reads the same request
 * and answers the same JSON, driven by the same client in the same run. The ratio says
 * what the whole path (auth, validation, sender check, suppression, usage reservation,
 * compilation, store, JetStream publish) costs against HTTP alone.
 *
 * The delivery service is left out by default so SMTP sending does not take the two cores
 * from the API being measured (jobs wait in JetStream); BENCH_API_WITH_DELIVERY=1 adds it.
 * BENCH_API_SECONDS sets the measured duration (default 10), BENCH_API_CONCURRENCY the
 * number of clients (default 64). The email service, where the send path spends most of its
 * CPU, runs as BENCH_EMAIL_WORKERS processes (MAILROOM_EMAIL_WORKERS; default 2, one per
 * core of the 2-core machine the goals are set on).
 *
 * Besides the single sends it drives `POST /v1/emails/batch` with 50 emails per request and
 * prints the CPU each process spent per request (per email for the batch), read from /proc.
 *
 * Traces: BENCH_API_TRACES=1 runs every unit with tracing on, exporting OTLP/HTTP protobuf (the
 * default protocol, every span sampled) to an endpoint in this process that counts and drops
 * what it gets, to read what traces cost against a run without them (the default: no exporter
 * configured, tracing off).
 *
 * Profiling: `npm run bench api -- --profile` (or BENCH_PROFILE=1) starts every unit with
 * `--cpu-prof`, prints each unit's hottest functions by self time, and leaves the
 * `.cpuprofile` files (open them in Chrome DevTools' Performance panel) in the printed folder.
 *
 * PostgreSQL: BENCH_STORE=postgres measures the system on the embedded store as always, then
 * starts it again with every unit on a PostgreSQL database made for the run (dropped at the
 * end; BENCH_POSTGRES_POOL connections per process, default 10) and measures the same windows:
 * req/s as a share of the embedded store's (the goal: ≥ 80 %, p99 ≤ 50 ms), and a `postgres`
 * row in the CPU per request: the backends of that database, read from /proc (bench/postgres.ts).
 *
 * Run: `npx tsx bench/api.ts` or `npm run bench api`.
 */
import { mkdtemp } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import type { UnitName } from "../deploy/processes.js";
import { cpuPerUnit, formatCpu, snapshot, type CpuSnapshot } from "./cpu.js";
import { summarizeProfiles } from "./profile.js";
import { rpcMeter } from "./rpcs.js";
import { benchStore, createBenchDatabase, describePostgresCpu, poolNote, postgresCpuMeter, postgresPerUnit, postgresUnitEnv, type BenchDatabase, type PostgresCpu } from "./postgres.js";

const KEY = "mr_bench_api_key_0001";
const BATCH_SIZE = 50;

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  statuses: Record<number, number>;
}

export interface ApiBenchResult {
  concurrency: number;
  api: LoadResult;
  batch: LoadResult;
  baseline: LoadResult;
  ratio: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;

/**
 * `concurrency` clients, each sending its next request as soon as the last answered, over
 * keep-alive connections, for `seconds` (after a warm-up that is not counted).
 */
export async function drive(
  url: string,
  opts: {
    body: string;
    headers: Record<string, string>;
    concurrency: number;
    seconds: number;
    warmupSeconds: number;
    /** Called when the measured window opens and closes (CPU snapshots). */
    onMeasure?: (phase: "start" | "end") => void;
  },
): Promise<LoadResult> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const post = () =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(opts.body), ...opts.headers },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
          res.on("error", reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error("request timed out")));
      req.on("error", reject);
      req.end(opts.body);
    });

  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  const client = async () => {
    while (!stop) {
      const started = performance.now();
      let status = 0;
      try {
        status = await post();
      } catch {
        status = 0;
      }
      if (!measuring) continue;
      latencies.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== 200) errors++;
    }
  };
  const clients = Array.from({ length: opts.concurrency }, client);
  await new Promise((r) => setTimeout(r, opts.warmupSeconds * 1000));
  opts.onMeasure?.("start");
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, opts.seconds * 1000));
  measuring = false;
  opts.onMeasure?.("end");
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(clients);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    statuses,
  };
}

/** A bare Node server that reads the request body and answers a fixed JSON body. */
async function startBareServer(responseBody: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      JSON.parse(Buffer.concat(chunks).toString("utf8")); // the API parses its body too
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(responseBody) });
      res.end(responseBody);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/emails`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

export interface ApiBenchPostgres {
  api: LoadResult;
  batch: LoadResult;
  /** req/s on PostgreSQL as a share of the embedded store's in the same run. */
  ratio: number;
}

/** One system's measured windows: single sends, batches, CPU and RPCs per request. */
interface SystemRun {
  api: LoadResult;
  batch: LoadResult;
  baseline?: LoadResult;
  apiCpu: string;
  apiRpcs: string;
  batchCpu: string;
  batchRpcs: string;
  /** What the postgres row is (BENCH_STORE=postgres). */
  postgresNotes: string[];
  profile?: string[];
  profileDir?: string;
}

export async function runApiBench(
  opts: { seconds?: number; concurrency?: number; withDelivery?: boolean; profile?: boolean; log?: (line: string) => void } = {},
): Promise<ApiBenchResult & { postgres?: ApiBenchPostgres }> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const seconds = opts.seconds ?? Number(process.env.BENCH_API_SECONDS ?? 10);
  const concurrency = opts.concurrency ?? Number(process.env.BENCH_API_CONCURRENCY ?? 64);
  const withDelivery = opts.withDelivery ?? process.env.BENCH_API_WITH_DELIVERY === "1";
  const warmupSeconds = Math.min(3, Math.max(1, seconds / 5));
  const units: UnitName[] = ["accounts", "audience", "renderer", "email", "gateway", ...(withDelivery ? (["delivery"] as const) : [])];
  const emailWorkers = Number(process.env.BENCH_EMAIL_WORKERS ?? 2);
  const profile = opts.profile ?? (process.argv.includes("--profile") || process.env.BENCH_PROFILE === "1");
  // BENCH_STORE=postgres: the embedded store's run as always, then the same on PostgreSQL.
  const onPostgres = benchStore() === "postgres";
  const traces = process.env.BENCH_API_TRACES === "1" ? await startDiscardingOtlpEndpoint() : undefined;

  const body = JSON.stringify({
    from: "Bench <hello@bench.test>",
    to: "reader@example.test",
    subject: "Your receipt",
    html: '<html><body><h1>Thanks for your order</h1><p>Order <b>#1234</b> is confirmed. <a href="https://bench.test/orders/1234">View it</a>.</p></body></html>',
  });
  const headers = { authorization: `Bearer ${KEY}` };

  /** Starts the system (on the embedded store, or on `database`), measures it, stops it. */
  const runSystem = async (database: BenchDatabase | undefined, withBaseline: boolean): Promise<SystemRun> => {
    const profileDir = profile ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
    log(`starting ${units.join(", ")} and nats-server (email service: ${emailWorkers} worker processes) …`);
    if (withBaseline) log(traces ? `traces: on, every span exported (OTLP/HTTP protobuf to ${traces.url})` : "traces: off (no OTEL_* exporter configured)");
    const sys: TestSystem = await startSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_bench", name: "Bench", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["bench.test"], members: [],
          monthlyLimit: 100_000_000, sendingAccountNew: false,
        }],
      },
      units,
      smtp: withDelivery,
      // On PostgreSQL, the run's own database (bench/postgres.ts), not the harness's.
      store: onPostgres ? "embedded" : undefined,
      env: {
        MAILROOM_LOG_LEVEL: "warn",
        MAILROOM_RATE_LIMIT_PER_MINUTE: "100000000",
        MAILROOM_EMAIL_WORKERS: String(emailWorkers),
        ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
        ...(traces ? { OTEL_EXPORTER_OTLP_ENDPOINT: traces.url } : {}),
        ...(database ? postgresUnitEnv(database) : {}),
      },
    });
    const unitPids = Object.fromEntries(sys.processes.units.map((u) => [u.name, u.child.pid]));
    const unitUrls = Object.fromEntries(sys.processes.units.map((u) => [u.name, u.name === "gateway" ? sys.gatewayUrl : `http://127.0.0.1:${u.port}`]));
    const pids = { ...unitPids, "nats-server": sys.nats.pid };
    /** CPU per request of each process over a drive()'s measured window (and the PostgreSQL server's backends). */
    const cpuMeter = () => {
      let before: CpuSnapshot = new Map();
      let after: CpuSnapshot = new Map();
      const rpcs = rpcMeter(unitUrls);
      const pg = database ? postgresCpuMeter(database.name) : undefined;
      let pgCpu: PostgresCpu | undefined;
      return {
        rpcs,
        onMeasure: (phase: "start" | "end") => {
          if (phase === "start") {
            before = snapshot(pids);
            pg?.start();
          } else {
            after = snapshot(pids);
            pgCpu = pg?.stop();
          }
          rpcs.onMeasure(phase);
        },
        perUnit: (units: number) => {
          const rows = cpuPerUnit(before, after, units);
          if (pgCpu) rows.push({ name: "postgres", ms: postgresPerUnit(pgCpu, units).ms });
          return rows.sort((a, b) => b.ms - a.ms);
        },
        postgres: (units: number, unitName: string) => (pgCpu ? describePostgresCpu(pgCpu, units, unitName) : undefined),
      };
    };
    let stopped = false;
    try {
      const probe = await sys.api("POST", "/v1/emails", { key: KEY, body: JSON.parse(body) });
      if (probe.status !== 200) throw new Error(`probe send failed: ${probe.status} ${JSON.stringify(probe.body)}`);
      const responseBody = JSON.stringify(probe.body);

      // The baseline first, while the system is up but idle: measured after the sends, it
      // would share the cores with work they left behind (publishes, outbox marks).
      let baseline: LoadResult | undefined;
      if (withBaseline) {
        const bare = await startBareServer(responseBody);
        try {
          log(`bare Node http server, same JSON: ${concurrency} clients, ${seconds} s`);
          baseline = await drive(bare.url, { body, headers, concurrency, seconds, warmupSeconds });
        } finally {
          await bare.close();
        }
      }

      log(`POST /v1/emails through the system: ${concurrency} clients, ${seconds} s (+${warmupSeconds} s warm-up)`);
      const apiCpu = cpuMeter();
      const api = await drive(`${sys.gatewayUrl}/v1/emails`, { body, headers, concurrency, seconds, warmupSeconds, onMeasure: apiCpu.onMeasure });

      // The batch route: 50 emails per request, each to its own recipient, as a bulk sender sends.
      const single = JSON.parse(body) as Record<string, unknown>;
      const batchBody = JSON.stringify({ emails: Array.from({ length: BATCH_SIZE }, (_, i) => ({ ...single, to: `reader${i}@example.test` })) });
      const batchProbe = await sys.api("POST", "/v1/emails/batch", { key: KEY, body: JSON.parse(batchBody) });
      if (batchProbe.status !== 200) throw new Error(`probe batch failed: ${batchProbe.status} ${JSON.stringify(batchProbe.body)}`);
      log(`POST /v1/emails/batch (${BATCH_SIZE} emails each) through the system: ${concurrency} clients, ${seconds} s`);
      const batchCpu = cpuMeter();
      const batch = await drive(`${sys.gatewayUrl}/v1/emails/batch`, { body: batchBody, headers, concurrency, seconds, warmupSeconds, onMeasure: batchCpu.onMeasure });

      const run: SystemRun = {
        api, batch, baseline,
        apiCpu: formatCpu(apiCpu.perUnit(api.requests)),
        apiRpcs: await apiCpu.rpcs.perUnit(api.requests),
        batchCpu: formatCpu(batchCpu.perUnit(batch.requests * BATCH_SIZE)),
        batchRpcs: await batchCpu.rpcs.perUnit(batch.requests * BATCH_SIZE),
        postgresNotes: [apiCpu.postgres(api.requests, "request"), batchCpu.postgres(batch.requests * BATCH_SIZE, "batched email")].filter((l): l is string => l !== undefined),
        profileDir,
      };
      await sys.stop();
      stopped = true;
      if (profileDir) run.profile = await summarizeProfiles(profileDir, unitPids);
      return run;
    } finally {
      if (!stopped) await sys.stop();
    }
  };

  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  const row = (name: string, r: LoadResult) =>
    `${name.padEnd(22)} ${fmt(r.perSecond).padStart(8)} req/s   p50 ${r.p50Ms.toFixed(1).padStart(7)} ms   p99 ${r.p99Ms.toFixed(1).padStart(7)} ms   ${r.requests} requests, ${r.errors} errors`;
  const printProfile = (run: SystemRun) => {
    if (!run.profileDir) return;
    log(`cpu profiles: ${run.profileDir}`);
    for (const line of run.profile ?? []) log(line);
  };

  try {
    const embedded = await runSystem(undefined, true);
    const { api, batch } = embedded;
    const baseline = embedded.baseline!;
    log(row("POST /v1/emails", api));
    log(row("bare http baseline", baseline));
    const ratio = api.perSecond / baseline.perSecond;
    log(`ratio (system / bare): ${(ratio * 100).toFixed(1)}% of the bare server's throughput; p50 ${(api.p50Ms / Math.max(baseline.p50Ms, 0.001)).toFixed(1)}x its latency`);
    log(`cpu per request (ms): ${embedded.apiCpu}`);
    log(`rpcs per request: ${embedded.apiRpcs}`);
    log(`${row(`POST /v1/emails/batch`, batch)}`);
    log(`batch: ${fmt(batch.perSecond * BATCH_SIZE)} emails/s (${BATCH_SIZE} per request)`);
    log(`cpu per batched email (ms): ${embedded.batchCpu}`);
    log(`rpcs per batched email: ${embedded.batchRpcs}`);
    if (traces && !onPostgres) log(`traces exported: ${traces.requests()} OTLP requests, ${fmt(traces.bytes() / 1024)} KiB`);
    if (api.errors) log(`non-200 answers from the system: ${JSON.stringify(api.statuses)}`);
    if (batch.errors) log(`non-200 answers to batches: ${JSON.stringify(batch.statuses)}`);
    printProfile(embedded);
    const result: ApiBenchResult & { postgres?: ApiBenchPostgres } = { concurrency, api, batch, baseline, ratio };
    if (!onPostgres) return result;

    // The same system on PostgreSQL, in a database of the run's own, right after.
    const database = await createBenchDatabase();
    let pg: SystemRun;
    try {
      log(`\nthe same on PostgreSQL (BENCH_STORE=postgres): every unit on database ${database.name}, ${poolNote()}`);
      pg = await runSystem(database, false);
    } finally {
      await database.drop();
    }
    const pgRatio = pg.api.perSecond / api.perSecond;
    log(row("POST /v1/emails (pg)", pg.api));
    log(`postgres / embedded: ${(pgRatio * 100).toFixed(1)}% of the embedded store's req/s (${fmt(pg.api.perSecond)} vs ${fmt(api.perSecond)}), ` +
      `p50 ${pg.api.p50Ms.toFixed(1)} vs ${api.p50Ms.toFixed(1)} ms, p99 ${pg.api.p99Ms.toFixed(1)} vs ${api.p99Ms.toFixed(1)} ms; ` +
      `goal ≥ 80 % ${pgRatio >= 0.8 ? "met" : "MISSED"}, p99 ≤ 50 ms ${pg.api.p99Ms <= 50 ? "met" : "MISSED"}; ${(pg.api.perSecond / baseline.perSecond * 100).toFixed(1)}% of the bare server`);
    log(`cpu per request (ms, pg): ${pg.apiCpu}`);
    log(`rpcs per request (pg): ${pg.apiRpcs}`);
    log(row("POST /v1/emails/batch (pg)", pg.batch));
    log(`batch (pg): ${fmt(pg.batch.perSecond * BATCH_SIZE)} emails/s (${BATCH_SIZE} per request), ${(pg.batch.perSecond / batch.perSecond * 100).toFixed(1)}% of the embedded store's`);
    log(`cpu per batched email (ms, pg): ${pg.batchCpu}`);
    log(`rpcs per batched email (pg): ${pg.batchRpcs}`);
    for (const line of pg.postgresNotes) log(line);
    if (traces) log(`traces exported (both systems): ${traces.requests()} OTLP requests, ${fmt(traces.bytes() / 1024)} KiB`);
    if (pg.api.errors) log(`non-200 answers from the system on PostgreSQL: ${JSON.stringify(pg.api.statuses)}`);
    if (pg.batch.errors) log(`non-200 answers to batches on PostgreSQL: ${JSON.stringify(pg.batch.statuses)}`);
    printProfile(pg);
    return { ...result, postgres: { api: pg.api, batch: pg.batch, ratio: pgRatio } };
  } finally {
    await traces?.close();
  }
}

/** An OTLP/HTTP endpoint that answers every export and keeps only counts (a collector's cost is not ours). */
async function startDiscardingOtlpEndpoint() {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on("data", (c: Buffer) => (bytes += c.length));
    req.on("end", () => {
      requests++;
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await runApiBench();
  process.exit(result.api.requests > 0 ? 0 : 1);
}
