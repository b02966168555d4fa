/**
 * Measures `contact import` at scale: rows/s and the importer's memory.
 *
 *   npx tsx test/audience/import-scale.ts [rows] [audience-url workspace]
 *   npx tsx test/audience/import-scale.ts e2e [rows] [runs]
 *
 * Without a URL the rows go to an in-process audience stub that answers at once, which
 * isolates the CLI's own cost (parsing, batching, duplicate detection) from the store's.
 * With one, they go to that audience unit (which needs the properties plan, seats, vip).
 *
 * `e2e` measures the real thing: it writes the CSV to /tmp, starts the accounts and audience
 * processes (services/accounts/src/main.ts loads the bootstrap, services/audience/src/main.ts
 * holds the contacts) on a fresh data dir with the default store, runs
 * `npx mailroom contact import` on a terminal (script(1), so the progress bar draws), then
 * counts the stored contacts over RPC and reports rows/s, the CLI's max RSS (time -f %M)
 * and the audience unit's (VmHWM).
 */
import { spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { create } from "@bufbuild/protobuf";
import { BatchUpsertContactsResponseSchema, ContactService, ListContactPropertiesResponseSchema, PropertyType, type BatchUpsertContactsRequest } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit";
import type { ContactClient } from "../../cli/client.js";
import { importContactsCsv } from "@mailroom/kit/contacts-csv/import-csv.js";

if (process.argv[2] === "e2e") {
  await endToEnd(Number(process.argv[3] ?? 1_000_000), Number(process.argv[4] ?? 1));
  process.exit(0);
}

const rows = Number(process.argv[2] ?? 1_000_000);
const url = process.argv[3];
const workspaceId = process.argv[4] ?? "ws_big";

const stub = {
  async listContactProperties() {
    const types = { plan: PropertyType.STRING, seats: PropertyType.NUMBER, vip: PropertyType.BOOLEAN };
    return create(ListContactPropertiesResponseSchema, { properties: Object.entries(types).map(([slug, type]) => ({ slug, type })) });
  },
  async batchUpsertContacts(req: BatchUpsertContactsRequest) {
    return create(BatchUpsertContactsResponseSchema, { results: req.contacts.map((_, index) => ({ index, ok: true, created: true })) });
  },
} as unknown as ContactClient;

/** The CSV: email, names, three typed custom properties, subscribed. */
function csvRows(rows: number): Readable {
  let i = 0;
  return new Readable({
    read() {
      if (i === 0) this.push("email,firstName,lastName,plan,seats,vip,subscribed\n");
      if (i >= rows) return void this.push(null);
      let chunk = "";
      for (const end = Math.min(rows, i + 1000); i < end; i++) {
        chunk += `user${i}@example.test,First${i},Last${i},${i % 3 ? "pro" : "free"},${i % 50},${i % 2 ? "yes" : "no"},true\n`;
      }
      this.push(chunk);
    },
  });
}
const input = csvRows(rows);

const rssBefore = process.memoryUsage().rss;
const started = performance.now();
const summary = await importContactsCsv({ client: url ? connectClient(ContactService, url) : stub, workspaceId, input });
const seconds = (performance.now() - started) / 1000;
const mb = (n: number) => `${Math.round(n / 1024 / 1024)} MB`;
console.log(JSON.stringify({
  target: url ?? "in-process stub",
  rows: summary.rows, created: summary.created, updated: summary.updated, rejected: summary.rejectedCount,
  seconds: Number(seconds.toFixed(1)), rowsPerSecond: Math.round(summary.rows / seconds),
  rssBefore: mb(rssBefore), maxRss: mb(process.resourceUsage().maxRSS * 1024),
}));

async function endToEnd(rows: number, runs: number): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-import-scale-"));
  const csv = path.join(dir, `contacts-${rows}.csv`);
  await pipeline(csvRows(rows), createWriteStream(csv));
  const bootstrap = path.join(dir, "bootstrap.json");
  await writeFile(bootstrap, JSON.stringify({ workspaces: [{
    id: "ws_big", name: "Big",
    contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }, { slug: "vip", type: "boolean" }],
  }] }));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const accountsPort = port + 1;
  const url = `http://127.0.0.1:${port}`;
  const urls = { MAILROOM_AUDIENCE_URL: url, MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${accountsPort}` };
  // node itself (not the tsx launcher) so the pid is the process whose memory we read.
  const start = (main: string, env: Record<string, string>) => spawn(process.execPath, ["--import", "tsx", main], {
    env: { ...process.env, ...urls, MAILROOM_DATA_DIR: path.join(dir, "data"), MAILROOM_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const audience = start("services/audience/src/main.ts", { MAILROOM_SERVICE_PORT: String(port) });
  // The accounts unit loads the bootstrap (the workspace and its properties, handed to the audience unit).
  const accounts = start("services/accounts/src/main.ts", { MAILROOM_BOOTSTRAP: bootstrap, MAILROOM_SERVICE_PORT: String(accountsPort) });
  const status = async (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(await readFile(`/proc/${audience.pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  const vmHwm = () => status("VmHWM");
  // RSS = heap and other private memory (RssAnon) + pages of the mapped LMDB file (RssFile, reclaimable cache).
  const peak = { anon: 0, file: 0 };
  const sample = async () => {
    peak.anon = Math.max(peak.anon, await status("RssAnon"));
    peak.file = Math.max(peak.file, await status("RssFile"));
  };
  try {
    const client = connectClient(ContactService, url);
    for (let tries = 0; ; tries++) {
      try {
        await client.listContacts({ workspaceId: "ws_big", page: { limit: 1 } });
        break;
      } catch (err) {
        if (tries > 120) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const hwmBefore = await vmHwm();
    // Run 2 and later import the same rows again: every row an existing, unchanged contact.
    for (let run = 1; run <= runs; run++) {
      const timeFile = path.join(dir, "cli-time");
      // script(1) gives the CLI a terminal, so it draws its progress bar as a user sees it.
      const command = `/usr/bin/time -f %M -o ${timeFile} npx mailroom contact import -w ws_big ${csv}`;
      const started = performance.now();
      const cli = spawn("script", ["-qec", command, "/dev/null"], { env: { ...process.env, ...urls }, stdio: ["ignore", "pipe", "inherit"] });
      let screen = "";
      cli.stdout!.on("data", (d: Buffer) => (screen = (screen + d.toString()).slice(-10_000)));
      const sampler = setInterval(() => void sample(), 500);
      const exitCode = await new Promise<number | null>((resolve) => cli.once("exit", resolve));
      clearInterval(sampler);
      await sample();
      const seconds = (performance.now() - started) / 1000;
      const audienceMaxRss = await vmHwm();
      console.error(screen.slice(-300));
      // A fresh client: the first one's idle keep-alive socket may have been closed by the server meanwhile.
      const counter = connectClient(ContactService, url);
      const stored = Number((await counter.listContacts({ workspaceId: "ws_big", page: { limit: 1 }, includeCount: true })).totalCount);
      const mb = (n: number) => `${Math.round(n / 1024 / 1024)} MB`;
      console.log(JSON.stringify({
        rows, cliExit: exitCode, run, cliSummary: /\d+ rows: .*/.exec(screen)?.[0] ?? screen.slice(-500),
        progressBarDrawn: screen.includes("importing |"), stored, allStored: stored === rows,
        seconds: Number(seconds.toFixed(1)), rowsPerSecond: Math.round(rows / seconds),
        cliMaxRss: mb(Number((await readFile(timeFile, "utf8")).trim().split("\n").pop()) * 1024),
        audienceRssAtStart: mb(hwmBefore), audienceMaxRss: mb(audienceMaxRss), audiencePeakRssAnon: mb(peak.anon), audiencePeakRssFile: mb(peak.file), audienceMaxRssAfterCount: mb(await vmHwm()),
      }));
    }
  } finally {
    for (const unit of [accounts, audience]) {
      unit.kill("SIGTERM");
      await new Promise((r) => unit.once("exit", r));
    }
    await rm(dir, { recursive: true, force: true });
  }
}
