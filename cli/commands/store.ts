import { existsSync, statSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { redactUrl } from "@mailroom/kit/logger.js";
import { openStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { action, parseLimit, UsageError, type CliContext } from "../context.js";
import { table } from "../output.js";
import { progressBar } from "../progress.js";
import { copyCollection, planUnit, type CollectionResult, type UnitPlan } from "../store-copy/copy.js";
import { defaultDataDir, launcherPids, openSource, otherReaders, unitsWithStores } from "../store-copy/data-dir.js";

const DEFAULT_BATCH = 500;

export function storeCommands(program: Command, ctx: CliContext): void {
  const store = program.command("store").description("the units' record stores");

  store.command("copy")
    .description("copy an embedded data dir (every unit's store) into PostgreSQL; run it again to resume an interrupted copy")
    .requiredOption("--to <url>", "PostgreSQL URL: postgres://user:password@host:5432/database")
    .option("--data-dir <dir>", "the data dir to copy (default: $MAILROOM_DATA_DIR, else ./.mailroom)")
    .option("--batch-size <n>", "documents per write", String(DEFAULT_BATCH))
    .action(action(ctx, async (opts: { to: string; dataDir?: string; batchSize: string }) => {
      const started = Date.now();
      const url = postgresUrl(opts.to);
      const batchSize = parseLimit(opts.batchSize, "--batch-size");
      if (batchSize < 1) throw new UsageError("--batch-size must be at least 1");
      const dataDir = path.resolve(opts.dataDir ?? defaultDataDir(ctx.env));
      if (!existsSync(dataDir) || !statSync(dataDir).isDirectory()) throw new UsageError(`no data dir at ${dataDir} (pass --data-dir or set MAILROOM_DATA_DIR)`);
      const units = unitsWithStores(dataDir);
      if (units.length === 0) throw new UsageError(`no embedded store in ${dataDir} (no <unit>/store.mdb; pass --data-dir or set MAILROOM_DATA_DIR)`);
      // Copying a store a unit still writes would miss its later writes: refuse while we can tell.
      const running = launcherPids(dataDir);
      if (running.length) throw new UsageError(`units are running on ${dataDir}: ${running.join(", ")}; stop them before copying`);

      const opened: Store[] = [];
      const results = new Map<string, CollectionResult[]>();
      const bar = progressBar(ctx.interactive, "copying |{bar}| {percentage}% | {value}/{total} documents | {collection}");
      try {
        const sources = [];
        for (const unit of units) {
          const source = await openSource(dataDir, unit, (line) => ctx.output.err(line));
          opened.push(source);
          const readers = otherReaders(source);
          if (readers.length) throw new UsageError(`${unit} has ${dataDir}/${unit} open (pid ${readers.join(", ")}): stop the units before copying`);
          sources.push({ unit, source });
        }
        const plans: UnitPlan[] = [];
        for (const { unit, source } of sources) {
          const target = await openTarget(url, unit, dataDir);
          opened.push(target);
          plans.push(await planUnit(unit, source, target));
        }
        const collections = plans.flatMap((p) => p.collections);
        const total = collections.reduce((n, c) => n + c.total, 0);
        const done = collections.reduce((n, c) => n + Math.min(c.total, c.progress?.copied ?? 0), 0);
        bar?.start(Math.max(total, done), done, { collection: "" });
        for (const plan of plans) {
          const unitResults: CollectionResult[] = [];
          results.set(plan.unit, unitResults);
          for (const c of plan.collections) {
            const t0 = Date.now();
            bar?.update({ collection: `${plan.unit}/${c.name}` });
            const r = await copyCollection(plan, c, batchSize, (n) => bar?.increment(n));
            unitResults.push(r);
            if (!bar) ctx.output.err(collectionLine(plan.unit, r, Date.now() - t0));
          }
        }
      } finally {
        bar?.stop();
        for (const s of opened.reverse()) await s.close().catch(() => undefined);
      }
      printSummary(ctx, dataDir, url, results, Date.now() - started);
    }));
}

/** The target URL, refused unless it is a PostgreSQL one. */
function postgresUrl(raw: string): string {
  let protocol = "";
  try {
    protocol = new URL(raw).protocol;
  } catch {
    // not a URL at all: refused below
  }
  if (protocol !== "postgres:" && protocol !== "postgresql:") {
    throw new UsageError(`--to must be a PostgreSQL URL (postgres://user:password@host:5432/database), not "${redactUrl(raw)}"`);
  }
  return raw;
}

/** The unit's schema on PostgreSQL, connected once here so a bad URL or a refused connection fails before any copying. */
async function openTarget(url: string, unit: string, dataDir: string): Promise<Store> {
  try {
    // Connects, and creates the schema (or finds it), at once.
    return await openStore({ service: unit, dataDir, postgresUrl: url });
  } catch (err) {
    throw new UsageError(`cannot use PostgreSQL at ${redactUrl(url)}: ${reasonOf(err)}`);
  }
}

/** pg's connection errors may carry only a code (ECONNREFUSED as an AggregateError has no message). */
function reasonOf(err: unknown): string {
  const e = err as { message?: string; code?: string; errors?: { message?: string }[] };
  return e?.message || e?.errors?.[0]?.message || e?.code || String(err);
}

function collectionLine(unit: string, r: CollectionResult, ms: number): string {
  if (r.alreadyDone) return `${unit}/${r.name}: ${r.documents} documents, copied by an earlier run`;
  const resumed = r.resumedAfter === undefined ? "" : `, resumed after ${r.documents - r.copied} copied earlier`;
  return `${unit}/${r.name}: ${r.documents} documents (${r.copied} copied now${resumed}, ${(ms / 1000).toFixed(1)} s)`;
}

function printSummary(ctx: CliContext, dataDir: string, url: string, results: Map<string, CollectionResult[]>, ms: number): void {
  const units = [...results].map(([unit, rs]) => ({
    unit,
    collections: rs.length,
    documents: rs.reduce((n, r) => n + r.documents, 0),
    copiedNow: rs.reduce((n, r) => n + r.copied, 0),
  }));
  const seconds = Number((ms / 1000).toFixed(1));
  if (ctx.output.json) {
    ctx.output.out(JSON.stringify({ dataDir, to: redactUrl(url), units, seconds }, null, 2));
    return;
  }
  const sum = (k: "collections" | "documents" | "copiedNow") => String(units.reduce((n, u) => n + u[k], 0));
  ctx.output.out(table([
    ["UNIT", "COLLECTIONS", "DOCUMENTS", "COPIED NOW"],
    ...units.map((u) => [u.unit, String(u.collections), String(u.documents), String(u.copiedNow)]),
    ["total", sum("collections"), sum("documents"), sum("copiedNow")],
  ]));
  ctx.output.out(`copied ${dataDir} to ${redactUrl(url)} in ${seconds} s`);
}
