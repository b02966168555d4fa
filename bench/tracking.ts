/**
 * Tracking benchmark: click redirects per second of the gateway's `GET /t/c/:link/:token`
 * (token check, event published to a real nats-server without waiting for its ack, 302)
 * at 64 concurrent keep-alive clients, beside a bare Node HTTP server answering the same
 * 302, driven by the same client in the same run. Only the gateway and nats-server run:
 * the click path must not need any other service.
 *
 * BENCH_TRACKING_SECONDS sets the measured duration (default 20), BENCH_TRACKING_CONCURRENCY
 * the number of clients (default 64).
 *
 * Run: `npx tsx bench/tracking.ts` or `npm run bench tracking`.
 */
import http from "node:http";
import { spawn } from "node:child_process";
import { pathToFileURL } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { startSystem } from "../test/harness/system.js";
import { signLinkToken, signRecipientToken } from "@mailroom/content/tokens.js";
import { linkPath } from "@mailroom/content/urls.js";
import { EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import type { LoadResult } from "./api.js";

const TARGET = "https://bench.test/pricing?plan=pro&utm_source=mail";
/** Distinct recipients the clients cycle through. */
const RECIPIENTS = 50_000;

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;

/** `concurrency` clients, each sending its next GET as soon as the last answered (keep-alive, no redirect following). */
async function driveGets(url: string, opts: { concurrency: number; seconds: number; warmupSeconds: number; expect: number; paths?: string[] }): Promise<LoadResult> {
  const target = new URL(url);
  const paths = opts.paths ?? [target.pathname + target.search];
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
  const get = () =>
    new Promise<number>((resolve, reject) => {
      const path = paths[next++ % paths.length];
      const req = http.request({ agent, host: target.hostname, port: target.port, path, method: "GET" }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error("request timed out")));
      req.on("error", reject);
      req.end();
    });
  let measuring = false;
  let stop = false;
  const latencies: number[] = [];
  const statuses: Record<number, number> = {};
  let errors = 0;
  const client = async () => {
    while (!stop) {
      const started = performance.now();
      const status = await get().catch(() => 0);
      if (!measuring) continue;
      latencies.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== opts.expect) errors++;
    }
  };
  const clients = Array.from({ length: opts.concurrency }, client);
  await new Promise((r) => setTimeout(r, opts.warmupSeconds * 1000));
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, opts.seconds * 1000));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(clients);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { requests: latencies.length, errors, seconds, perSecond: latencies.length / seconds, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), statuses };
}

/**
 * The baseline: a bare Node server that answers every request with the same 302, placed as
 * the gateway is: its own process in its own session (`detached`, as deploy/processes starts
 * units). Linux's autogroup scheduler shares the CPU between sessions, so a server in the
 * bench's own session would get the bench's share and not be comparable.
 */
async function startBareRedirectServer(location: string): Promise<{ url: string; close(): Promise<void> }> {
  const source = `
    const http = require("node:http");
    const server = http.createServer((req, res) => {
      res.writeHead(302, { location: ${JSON.stringify(location)}, "cache-control": "no-store", "content-length": "0" });
      res.end();
    });
    server.keepAliveTimeout = 65000;
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));
    process.on("disconnect", () => process.exit(0));
  `;
  const child = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", "inherit", "ipc"], detached: true });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once("data", (d: Buffer) => resolve(Number(String(d).trim())));
    child.once("exit", (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/t/c/link/token`,
    close: () => new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    }),
  };
}

/** Sums rounds of one target into one result (latencies weighted by requests). */
function combine(rounds: LoadResult[]): LoadResult {
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const seconds = rounds.reduce((n, r) => n + r.seconds, 0);
  const weighted = (pick: (r: LoadResult) => number) => rounds.reduce((n, r) => n + pick(r) * r.requests, 0) / Math.max(requests, 1);
  const statuses: Record<number, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.statuses)) statuses[Number(k)] = (statuses[Number(k)] ?? 0) + v;
  return {
    requests,
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    seconds,
    perSecond: requests / seconds,
    p50Ms: weighted((r) => r.p50Ms),
    p99Ms: weighted((r) => r.p99Ms),
    statuses,
  };
}

export interface TrackingBenchResult {
  concurrency: number;
  clicks: LoadResult;
  baseline: LoadResult;
  ratio: number;
  /** Click events the stream holds after the run (the events were published, not dropped). */
  eventsStored: number;
}

export async function runTrackingBench(opts: { seconds?: number; concurrency?: number; log?: (line: string) => void } = {}): Promise<TrackingBenchResult> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const seconds = opts.seconds ?? Number(process.env.BENCH_TRACKING_SECONDS ?? 20);
  const concurrency = opts.concurrency ?? Number(process.env.BENCH_TRACKING_CONCURRENCY ?? 64);
  const warmupSeconds = Math.min(3, Math.max(1, seconds / 5));

  log("starting the gateway and nats-server …");
  const sys = await startSystem({ units: ["gateway"], smtp: false, env: { MAILROOM_LOG_LEVEL: "warn" } });
  try {
    // Every click is another recipient's, so every click is an event the stream must store
    // (one recipient clicking again within a second would be deduplicated instead).
    const contentId = "trs_01jqz8k4m2x7v9c3n5b6t1w0ye";
    const link = signLinkToken(sys.secret, { contentId, index: 0, url: TARGET });
    const clickPaths = Array.from({ length: RECIPIENTS }, (_, i) => {
      const token = signRecipientToken(sys.secret, { workspaceId: "ws_bench", messageId: `<bench-${i}@bench.test>`, email: `reader${i}@example.test`, contactId: "", contentId });
      return linkPath("click", { link, token });
    });
    const probe = await fetch(sys.gatewayUrl + clickPaths[0], { redirect: "manual" });
    if (probe.status !== 302 || probe.headers.get("location") !== new URL(TARGET).href) throw new Error(`probe click failed: ${probe.status} ${probe.headers.get("location")}`);

    // The machine's load moves during a run: the two targets take turns, in rounds.
    const bare = await startBareRedirectServer(new URL(TARGET).href);
    const clickRounds: LoadResult[] = [];
    const bareRounds: LoadResult[] = [];
    try {
      const rounds = Math.max(1, Math.round(seconds / 5));
      const perRound = seconds / rounds;
      log(`GET /t/c/… through the gateway, then the bare redirect server, ${rounds} rounds of ${perRound.toFixed(1)} s each (+${warmupSeconds} s warm-up first): ${concurrency} clients`);
      for (let i = 0; i < rounds; i++) {
        // A full warm-up before the first round; later rounds only open their connections again.
        const warmup = i === 0 ? warmupSeconds : 0.5;
        clickRounds.push(await driveGets(sys.gatewayUrl, { concurrency, seconds: perRound, warmupSeconds: warmup, expect: 302, paths: clickPaths }));
        bareRounds.push(await driveGets(bare.url, { concurrency, seconds: perRound, warmupSeconds: warmup, expect: 302 }));
      }
    } finally {
      await bare.close();
    }
    const clicks = combine(clickRounds);
    const baseline = combine(bareRounds);

    const nc = await connect({ servers: sys.nats.url });
    const eventsStored = Number((await (await jetstreamManager(nc)).streams.info(EVENTS_STREAM)).state.messages);
    await nc.close();

    const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
    const latency = (r: LoadResult) => `(p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms; ${r.requests} requests, ${r.errors} errors)`;
    log(`click redirects: ${fmt(clicks.perSecond)} req/s ${latency(clicks)}`);
    log(`bare redirect server: ${fmt(baseline.perSecond)} req/s ${latency(baseline)}`);
    const ratio = clicks.perSecond / baseline.perSecond;
    log(`ratio: ${(ratio * 100).toFixed(1)}% of the bare redirect server (goal ≥ 50 %)`);
    log(`click events stored in ${EVENTS_STREAM}: ${eventsStored} (one per click: every click was another recipient's)`);
    if (clicks.errors) log(`unexpected answers from the gateway: ${JSON.stringify(clicks.statuses)}`);
    return { concurrency, clicks, baseline, ratio, eventsStored };
  } finally {
    await sys.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await runTrackingBench();
  process.exit(result.clicks.requests > 0 ? 0 : 1);
}
