import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry } from "prom-client";
import { onShutdown } from "./connect.js";
import type { Logger } from "./logger.js";
import { serveWorkerScrapes } from "./metrics.js";

/**
 * Runs a unit as `count` worker processes that share its port (node:cluster): the primary
 * only forks, restarts a worker that dies (after a second, so a crash loop does not spin),
 * and on SIGINT/SIGTERM stops them all and exits. Each worker runs the unit's ordinary
 * main and must be safe beside copies of itself, as units already are beside other
 * processes of their kind (store CAS claims, durable consumers shared, owner ids per process).
 *
 * Answers true in the primary, which must then do nothing else; false in a worker, or when
 * `count` is 1 and the unit runs in this one process as before.
 */
export function superviseWorkers(count: number, logger: Logger, exitWithParent: boolean): boolean {
  if (count <= 1 || !cluster.isPrimary) return false;
  let stopping = false;
  let allExited: () => void = () => undefined;
  const live = new Set<Worker>();
  const aggregator = new AggregatorRegistry();
  const fork = () => {
    const worker = cluster.fork();
    live.add(worker);
    serveWorkerScrapes(worker, aggregator);
    worker.on("exit", (code, signal) => {
      live.delete(worker);
      if (stopping) {
        if (!live.size) allExited();
        return;
      }
      logger.error({ pid: worker.process.pid, code, signal }, "worker exited; starting another");
      setTimeout(fork, 1_000).unref();
    });
  };
  for (let i = 0; i < count; i++) fork();
  logger.info({ workers: count }, "worker processes started");

  // The units' own shutdown (signals, a parent that is gone): here, stop the workers and wait for them.
  onShutdown(
    logger,
    () =>
      new Promise<void>((resolve, reject) => {
        stopping = true;
        allExited = resolve;
        if (!live.size) return resolve();
        for (const worker of live) worker.process.kill("SIGTERM");
        // A worker that does not finish its shutdown in time is not waited for.
        setTimeout(() => reject(new Error("workers did not stop within 15 s")), 15_000).unref();
      }),
    exitWithParent,
  );
  // Keeps the primary alive while it supervises (its own event loop has nothing else to do).
  setInterval(() => undefined, 60_000);
  return true;
}
