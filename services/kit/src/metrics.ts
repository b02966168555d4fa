/**
 * Prometheus metrics for every process: one registry per process, the Node process metrics
 * (CPU, memory, GC, event-loop lag from perf_hooks.monitorEventLoopDelay), and helpers units
 * use to declare their own counters. Metric names start with `mailroom_`; labels are bounded
 * sets (route patterns, RPC methods, durables, results), never ids or raw URLs.
 *
 * `startConnectServer` serves the registry at GET /metrics on every service's Connect port and
 * the gateway serves it on its public port (gateway/src/metrics.ts).
 */
import { timingSafeEqual } from "node:crypto";
import cluster, { type Worker } from "node:cluster";
import client, { AggregatorRegistry, Counter, Gauge, Histogram, Registry, type CounterConfiguration, type RegistryContentType } from "prom-client";

/** The process's registry: everything any module of this process declares lands here. */
export const metricsRegistry = new Registry();

let processMetricsStarted = false;

/**
 * Node's process metrics (process_cpu_*, process_resident_memory_bytes, nodejs_heap_*,
 * nodejs_eventloop_lag_* sampled by monitorEventLoopDelay, GC durations). Idempotent.
 */
export function collectProcessMetrics(): void {
  if (processMetricsStarted) return;
  processMetricsStarted = true;
  // 10 ms resolution: fine enough to see a blocked loop, cheap enough to leave on.
  client.collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: 10 });
}

/** Latency buckets in seconds, from a local RPC (1 ms) to a slow SMTP transaction (30 s). */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type Labels<L extends string> = readonly L[];

function existing<M>(name: string): M | undefined {
  return metricsRegistry.getSingleMetric(name) as M | undefined;
}

/**
 * A counter on the process registry. Declaring the same name again returns the first one, so
 * a module loaded twice (tests) or several instances of an adapter share it.
 */
export function counter<L extends string = never>(name: string, help: string, labelNames: Labels<L> = []): Counter<L> {
  return existing<Counter<L>>(name) ?? new Counter<L>({ name, help, labelNames: [...labelNames], registers: [metricsRegistry] } as CounterConfiguration<L>);
}

/**
 * How a unit's workers' values combine in one scrape (kit/workers.ts): `sum` for what each
 * worker holds (in-flight messages, connections), `max` for a value every worker observes of
 * the same thing (a durable's backlog), `min` for health that is bad when any worker sees it.
 */
export type GaugeAggregator = "sum" | "max" | "min";

export function gauge<L extends string = never>(
  name: string,
  help: string,
  labelNames: Labels<L> = [],
  collect?: (this: Gauge<L>) => void | Promise<void>,
  aggregator: GaugeAggregator = "sum",
): Gauge<L> {
  return existing<Gauge<L>>(name) ?? new Gauge<L>({ name, help, labelNames: [...labelNames], registers: [metricsRegistry], aggregator, ...(collect ? { collect } : {}) });
}

export function histogram<L extends string = never>(name: string, help: string, labelNames: Labels<L> = [], buckets: number[] = LATENCY_BUCKETS): Histogram<L> {
  return existing<Histogram<L>>(name) ?? new Histogram<L>({ name, help, labelNames: [...labelNames], buckets, registers: [metricsRegistry] });
}

/** Seconds elapsed since `startedMs` (a performance.now() reading), for histograms. */
export function secondsSince(startedMs: number): number {
  return (performance.now() - startedMs) / 1000;
}

/** The exposition text and its content type; a worker answers for all workers of its unit. */
export async function scrapeMetrics(): Promise<{ contentType: string; body: string }> {
  if (cluster.isWorker && process.send) return { contentType: metricsRegistry.contentType, body: await askPrimaryForMetrics() };
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}

/*
 * Units run as several workers (kit/workers.ts) share one port, so a scrape reaches one of
 * them at random: it asks the primary, which gathers every worker's registry (prom-client's
 * AggregatorRegistry sums counters and histograms) and answers over IPC.
 */
const SCRAPE = "mailroom:metrics-scrape";
const SCRAPED = "mailroom:metrics-scraped";
let scrapes = 0;
const waiting = new Map<number, { resolve: (body: string) => void; reject: (err: Error) => void }>();

if (cluster.isWorker) {
  // Constructing one installs prom-client's answer to the primary's gathering requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([metricsRegistry]);
  process.on("message", (msg: { type?: string; id?: number; body?: string; error?: string }) => {
    if (msg?.type !== SCRAPED || msg.id === undefined) return;
    const pending = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error !== undefined) pending?.reject(new Error(msg.error));
    else pending?.resolve(msg.body ?? "");
  });
}

function askPrimaryForMetrics(): Promise<string> {
  const id = ++scrapes;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error("the primary did not answer the metrics scrape"));
    }, 10_000);
    waiting.set(id, {
      resolve: (body) => (clearTimeout(timer), resolve(body)),
      reject: (err) => (clearTimeout(timer), reject(err)),
    });
    process.send!({ type: SCRAPE, id });
  });
}

/** In a primary: answers its workers' scrape requests with the metrics of them all. */
export function serveWorkerScrapes(worker: Worker, aggregator: AggregatorRegistry<RegistryContentType>): void {
  worker.on("message", (msg: { type?: string; id?: number }) => {
    if (msg?.type !== SCRAPE) return;
    aggregator.clusterMetrics().then(
      (body) => worker.send({ type: SCRAPED, id: msg.id, body }),
      (err: Error) => worker.send({ type: SCRAPED, id: msg.id, error: err.message }),
    );
  });
}

/**
 * Whether a scrape may read the metrics: always when no token is configured
 * (MAILROOM_METRICS_TOKEN), else only with `Authorization: Bearer <token>`.
 */
export function metricsAuthorized(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const given = Buffer.from(authorization ?? "");
  const wanted = Buffer.from(`Bearer ${token}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
