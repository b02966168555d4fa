/**
 * PostgreSQL for the benchmarks (BENCH_STORE=postgres): which store a bench runs on, a database
 * of the run's own on the server the tests use (MAILROOM_TEST_POSTGRES_URL, default
 * postgres://127.0.0.1:5432/test: PostgreSQL 15, trust authentication; made and dropped as the
 * store contract's are, services/store/src/postgres.fixture.ts), and the server's CPU read from
 * /proc (Linux; the bench must be allowed to read the server's /proc entries, e.g. run as root or
 * as the postgres user).
 *
 * CPU, two figures:
 *  - `postgres` (the row the benches print): the backends connected to the run's database, found
 *    by their process title (`postgres: <cluster>: <user> <database> <host> …`), plus the parallel
 *    workers of those backends (`parallel worker for PID <backend>`), user + system time from
 *    /proc/<pid>/stat. Sampled (default every 250 ms) and at the start and end of the window: a
 *    backend seen for the first time in the window counts from zero (its start-up included); one
 *    that exits loses what it spent since its last sample (short-lived parallel workers above
 *    all), so the figure is a lower bound. Nobody else's work is in it.
 *  - `server`: every process of the server: the postmaster's own time plus its reaped children's
 *    (cutime + cstime: every backend that exited) plus every live child's. Exact, but it holds the
 *    checkpointer, WAL writer and anyone else's backends on the same server (other test runs).
 */
import { readdirSync, readFileSync } from "node:fs";
import { createTestDatabase } from "@mailroom/store/postgres.fixture.js";

export type BenchStore = "embedded" | "postgres";

/** BENCH_STORE: `embedded` (default) or `postgres`. */
export function benchStore(): BenchStore {
  const value = (process.env.BENCH_STORE ?? "embedded").trim().toLowerCase();
  if (value === "" || value === "embedded" || value === "lmdb") return "embedded";
  if (value === "postgres" || value === "postgresql" || value === "pg") return "postgres";
  throw new Error(`BENCH_STORE=${process.env.BENCH_STORE}: choose embedded or postgres`);
}

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A database of the run's own (mailroom_test_<random>); the caller drops it. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const database = await createTestDatabase();
  if ("skipReason" in database) throw new Error(`BENCH_STORE=postgres needs a PostgreSQL server: ${database.skipReason}`);
  return database;
}

/**
 * The environment every unit gets on PostgreSQL: the run's database, and the connections per
 * process when BENCH_POSTGRES_POOL says (else the adapter's default, 10, as a deployment gets).
 */
export function postgresUnitEnv(database: BenchDatabase): Record<string, string> {
  return {
    MAILROOM_POSTGRES_URL: database.url,
    ...(process.env.BENCH_POSTGRES_POOL ? { MAILROOM_POSTGRES_POOL: process.env.BENCH_POSTGRES_POOL } : {}),
  };
}

export const poolNote = () => `${process.env.BENCH_POSTGRES_POOL ?? "10 (the default)"} connections per process`;

const TICKS_PER_SECOND = 100;

/** The fields after a /proc/<pid>/stat's command name. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** utime + stime (+ cutime + cstime with `children`) in seconds. */
function cpuOf(pid: number, children = false): number | undefined {
  const f = statFields(pid);
  if (!f) return undefined;
  const own = Number(f[11]) + Number(f[12]);
  return (own + (children ? Number(f[13]) + Number(f[14]) : 0)) / TICKS_PER_SECOND;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
  } catch {
    return "";
  }
}

const numericEntries = () => {
  try {
    return readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number);
  } catch {
    return [];
  }
};

/** The postmaster: the parent of a process titled `postgres: …`. */
function findPostmaster(): number | undefined {
  for (const pid of numericEntries()) {
    if (!cmdline(pid).startsWith("postgres: ")) continue;
    const ppid = Number(statFields(pid)?.[1]);
    if (ppid > 1) return ppid;
  }
  return undefined;
}

export interface PostgresCpu {
  /** The run's database's backends (and their parallel workers), CPU seconds: a lower bound. */
  seconds: number;
  /** Every process of the server, CPU seconds (exact; other users of the server included). */
  serverSeconds: number | undefined;
  /** Distinct backends of the run's database seen in the window, and the most at once. */
  backends: number;
  peakBackends: number;
  /** The largest sum of the backends' RssAnon seen (MB). */
  peakAnonMb: number;
}

/**
 * A window over which the server's CPU is measured: start(), then stop() for the figures.
 * `everyMs` 0: no sampling in between (only the two ends: for long-lived pools and a bench
 * whose own CPU would be disturbed by the sampling).
 */
export function postgresCpuMeter(database: string, everyMs = 250) {
  const postmaster = findPostmaster();
  const ours = new Map<number, boolean>(); // pid → counted (classified once)
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let peakBackends = 0;
  let peakAnonMb = 0;
  let serverStart: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  const marker = ` ${database} `;

  const serverNow = (): number | undefined => {
    if (!postmaster) return undefined;
    let total = cpuOf(postmaster, true);
    if (total === undefined) return undefined;
    for (const pid of numericEntries()) {
      if (pid === postmaster) continue;
      const f = statFields(pid);
      if (f && Number(f[1]) === postmaster) total += (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND;
    }
    return total;
  };

  const sample = (initial: boolean) => {
    const live = numericEntries();
    let backends = 0;
    let anonKb = 0;
    for (const pid of live) {
      let counted = ours.get(pid);
      if (counted === undefined) {
        const title = cmdline(pid);
        const leader = /parallel worker for PID (\d+)/.exec(title)?.[1];
        counted = title.startsWith("postgres: ") && (title.includes(marker) || (leader !== undefined && ours.get(Number(leader)) === true));
        ours.set(pid, counted);
      }
      if (!counted) continue;
      const cpu = cpuOf(pid);
      if (cpu === undefined) continue;
      if (!first.has(pid)) first.set(pid, initial ? cpu : 0);
      last.set(pid, cpu);
      backends++;
      const m = /RssAnon:\s+(\d+) kB/.exec(readFileSafe(`/proc/${pid}/status`));
      if (m) anonKb += Number(m[1]);
    }
    peakBackends = Math.max(peakBackends, backends);
    peakAnonMb = Math.max(peakAnonMb, Math.round(anonKb / 1024));
  };

  return {
    start() {
      sample(true);
      serverStart = serverNow();
      if (everyMs > 0) {
        timer = setInterval(() => sample(false), everyMs);
        timer.unref();
      }
    },
    stop(): PostgresCpu {
      clearInterval(timer);
      sample(false);
      const serverEnd = serverNow();
      let seconds = 0;
      for (const [pid, end] of last) seconds += end - (first.get(pid) ?? 0);
      return {
        seconds,
        serverSeconds: serverStart !== undefined && serverEnd !== undefined ? serverEnd - serverStart : undefined,
        backends: last.size,
        peakBackends,
        peakAnonMb,
      };
    },
  };
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** `postgres 0.123` style figures: ms of CPU per unit of work. */
export function postgresPerUnit(cpu: PostgresCpu, units: number): { ms: number; serverMs: number | undefined } {
  return { ms: units > 0 ? (cpu.seconds * 1000) / units : 0, serverMs: cpu.serverSeconds !== undefined && units > 0 ? (cpu.serverSeconds * 1000) / units : undefined };
}

/** One line saying what the postgres row is, for the benches to print under their CPU lines. */
export function describePostgresCpu(cpu: PostgresCpu, units: number, unitName: string): string {
  const per = postgresPerUnit(cpu, units);
  return `  (postgres = the run's database's backends from /proc, ${cpu.backends} seen, at most ${cpu.peakBackends} at once, ` +
    `${cpu.seconds.toFixed(1)} s of CPU, ${per.ms.toFixed(3)} ms per ${unitName}, their RssAnon peak ${cpu.peakAnonMb} MB; ` +
    `the whole server incl. its background processes and anyone else's backends: ${per.serverMs === undefined ? "?" : `${per.serverMs.toFixed(3)} ms per ${unitName}`})`;
}
