/**
 * Suppression import benchmark (issue 48): N suppressions (default 1,000,000;
 * BENCH_SUPPRESSIONS) imported through `POST /v1/suppressions/import` as one streamed CSV
 * (`email,reason,source,created_at`), through the gateway, the audience unit (beside the
 * accounts unit, which authenticates the key) and the webhooks unit (which consumes every
 * SUPPRESSION_CREATED) as separate processes, on the embedded store. The body is generated as
 * it is sent: neither side holds the file.
 *
 * Timed: from the first byte sent until the import's report. Printed: rows per second (goal
 * ≥ 50,000), the report's counts, and each process's peak anonymous memory (RssAnon, sampled
 * every 250 ms; goal every process under 300 MB). Baseline in the same run: parsing the same
 * CSV in this process with csv-parse (no writes), the ceiling of the gateway's own reading.
 * A second import of the same file (every row existing) is timed too: idempotency's cost.
 *
 * A send's suppression check stays one store lookup (the address, its erased key and its
 * domain's key in one `$in`): compare `npm run bench api` before and after.
 *
 * Run: `npm run bench suppressions` or `npx tsx bench/suppressions.ts`; `BENCH_PROFILE=1`
 * profiles the units (`--cpu-prof`) and prints each one's hottest functions.
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { parse } from "csv-parse";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import { pidListeningAs, sampleAnonPeaks } from "./memory.js";
import { cpuSeconds } from "./cpu.js";
import { summarizeProfiles } from "./profile.js";

const WS = "ws_bench_suppressions";
const KEY = `mr_test_${WS}_1`;
const REASONS = ["hard_bounce", "complaint", "unsubscribed", "imported", "manual"];

/** The CSV, generated a chunk of rows at a time. */
function csvRows(n: number, rowsPerChunk = 2_000): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i === 0) this.push("email,reason,source,created_at\n");
      if (i >= n) return void this.push(null);
      let chunk = "";
      for (const end = Math.min(n, i + rowsPerChunk); i < end; i++) {
        chunk += `user${i}@bench${i % 997}.example,${REASONS[i % REASONS.length]},bench.csv,2025-0${1 + (i % 9)}-1${i % 10}T10:00:00Z\n`;
      }
      this.push(chunk);
    },
  });
}

async function importOnce(sys: TestSystem, n: number): Promise<{ seconds: number; report: any }> {
  const started = performance.now();
  const res = await fetch(`${sys.gatewayUrl}/v1/suppressions/import?filename=bench.csv`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "text/csv" },
    body: Readable.toWeb(csvRows(n)) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  const report = await res.json();
  if (res.status !== 200) throw new Error(`import: ${res.status} ${JSON.stringify(report).slice(0, 500)}`);
  return { seconds: (performance.now() - started) / 1000, report };
}

export async function runSuppressionsBench(): Promise<void> {
  const n = Number(process.env.BENCH_SUPPRESSIONS ?? 1_000_000);

  // Baseline: csv-parse alone over the same generated file.
  const baseStarted = performance.now();
  let parsed = 0;
  for await (const _row of csvRows(n).pipe(parse({ info: true }))) parsed++;
  const baseRate = (parsed - 1) / ((performance.now() - baseStarted) / 1000);

  const profileDir = process.env.BENCH_PROFILE === "1" ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
  let sys: TestSystem | undefined;
  let unitPids: Record<string, number | undefined> = {};
  try {
    sys = await startSystem({
      smtp: false,
      units: ["accounts", "audience", "webhooks", "gateway"],
      bootstrap: { workspaces: [{ id: WS, name: "Bench", timezone: "UTC", apiKeys: [{ key: KEY, scopes: ["api_user"] }], members: ["owner@acme.test"] }] },
      env: { MAILROOM_LOG_LEVEL: "warn", ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}) },
    });
    const pids = new Map<string, number | undefined>(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    unitPids = Object.fromEntries(pids);
    pids.set("nats-server", await pidListeningAs("nats-server", sys.nats.port));

    const anon = sampleAnonPeaks(pids);
    const cpuBefore = new Map([...pids].map(([name, pid]) => [name, cpuSeconds(pid) ?? 0]));
    const first = await importOnce(sys, n);
    await anon.stop();
    // CPU per row of each process: what a loaded machine (the wall time is shared) still measures.
    const cpuPerRow = [...pids].map(([name, pid]) => `${name} ${((((cpuSeconds(pid) ?? 0) - cpuBefore.get(name)!) / n) * 1e6).toFixed(1)}`);
    const rate = n / first.seconds;
    console.log(`  import  ${n.toLocaleString("en")} rows in ${first.seconds.toFixed(1)} s: ${Math.round(rate).toLocaleString("en")} rows/s (goal ≥ 50,000)`
      + `; imported ${first.report.imported}, existing ${first.report.existing}, rejected ${first.report.rejectedCount}`);
    console.log(`  baseline csv-parse alone: ${Math.round(baseRate).toLocaleString("en")} rows/s; import / baseline ${(rate / baseRate).toFixed(2)}`);
    console.log(`  peak anonymous memory (MB, goal < 300 each): ${[...anon.peaks].map(([name, mb]) => `${name} ${mb}`).join(", ")}`);
    console.log(`  CPU per row (µs; 2 cores at 50,000 rows/s leave 40 in all): ${cpuPerRow.join(", ")}; load average ${os.loadavg()[0].toFixed(1)}`);

    const again = await importOnce(sys, n);
    console.log(`  again   ${n.toLocaleString("en")} rows in ${again.seconds.toFixed(1)} s: ${Math.round(n / again.seconds).toLocaleString("en")} rows/s; imported ${again.report.imported}, existing ${again.report.existing}`);
    if (first.report.imported !== n || again.report.imported !== 0) throw new Error(`unexpected reports: ${JSON.stringify([first.report, again.report]).slice(0, 500)}`);
  } catch (err) {
    if (sys) for (const unit of ["audience", "gateway"] as const) console.error(`${unit} log:\n${await sys.log(unit, 30)}`);
    throw err;
  } finally {
    await sys?.stop();
    if (profileDir) {
      console.log(`cpu profiles: ${profileDir}`);
      for (const line of await summarizeProfiles(profileDir, unitPids, 14)) console.log(line);
    }
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runSuppressionsBench();
  process.exit(0);
}
