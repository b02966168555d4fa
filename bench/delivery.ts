/**
 * Delivery benchmark: N small messages (default 20,000; MAILROOM_BENCH_DELIVERY_MESSAGES)
 * through the whole delivery path — the content written once to the content store (a
 * JetStream KV bucket), page jobs of 500 recipients published to JetStream as the broadcast
 * service releases them, pulled by the delivery workers (claim in the store, merge, MIME,
 * SMTP pool, mark, outcome event, ack) — into a local SMTP sink, beside a raw nodemailer
 * pool sending the same messages to the same sink in the same run. Target: the pipeline at
 * >= 100% of the raw pool's rate.
 *
 * The sink is Postfix's smtp-sink when installed (Debian package postfix): a Node sink
 * tops out near the sender's own rate and would measure itself. Otherwise the harness's
 * Node sink runs in a child process, and the output says so.
 *
 * The accounts unit (sender check) is an in-process fake here: its answer is cached by the
 * workers anyway, and it is not what is measured.
 *
 * Run: `npx tsx bench/delivery.ts` or `npm run bench delivery`. Environment:
 * MAILROOM_BENCH_DELIVERY_MESSAGES (20000), MAILROOM_BENCH_DELIVERY_ROUNDS (2),
 * MAILROOM_BENCH_SINK=node (skip smtp-sink), MAILROOM_BENCH_DELIVERY_DKIM=1 (both sides
 * sign every message with one RSA-2048 key); MAILROOM_SMTP_POOL_SIZE and the other
 * delivery settings apply to both sides.
 *
 * The jobs are a broadcast's page jobs (the broadcast lane, messages built from the
 * broadcast's MIME skeleton); the raw pool builds each message from scratch, as nodemailer does.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import nodemailer from "nodemailer";
import { jetstream } from "@nats-io/jetstream";
import { startSink } from "./sink.js";
import { startNats } from "../test/harness/nats.js";
import { loadConfig } from "@mailroom/kit/config.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { ContentStore } from "@mailroom/pipeline/content-store.js";
import { DeliveryJobPublisher } from "@mailroom/pipeline/delivery-jobs.js";
import { variablesJson, type DeliveryPageSpec } from "@mailroom/pipeline/work.js";
import { openStore } from "@mailroom/store/open.js";
import { startDelivery } from "../services/delivery/src/main.js";
import { loadDeliverySettings } from "../services/delivery/src/settings.js";
import { compiledFrom, FakeDirectory, silentLogger } from "../services/delivery/src/testing.js";

const TARGET_RATIO = 1;
/** Recipients per page job: the broadcast service's release window. */
const PAGE = 500;

/** One signing key for both sides when MAILROOM_BENCH_DELIVERY_DKIM=1. */
const DKIM_KEY = (() => {
  if (!/^(1|true|yes)$/.test(process.env.MAILROOM_BENCH_DELIVERY_DKIM ?? "")) return undefined;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { domain: "acme.test", selector: "bench", privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() };
})();

export interface DeliveryBenchResult {
  messages: number;
  sink: string;
  rawPerSecond: number;
  pipelinePerSecond: number;
  ratio: number;
}

/** Messages per second, and CPU time of this process per message (publishing included for the pipeline). */
interface Run {
  perSecond: number;
  cpuUsPerMessage: number;
}

const message = (i: number) => ({
  from: { name: "Acme", address: "news@acme.test" },
  to: `user${i}@example.test`,
  subject: `Hello Ann ${i}`,
  html: `<p>Hi Ann, this is message ${i} of the benchmark.</p>`,
  text: `Hi Ann, this is message ${i} of the benchmark.`,
});

/** A raw nodemailer pool sending `n` messages, at most `window` waiting at once. */
async function rawPool(port: number, n: number, pool: { size: number; maxMessages: number }, window = 256): Promise<Run> {
  const transport = nodemailer.createTransport({
    host: "127.0.0.1", port, secure: false, ignoreTLS: true, pool: true,
    maxConnections: pool.size, maxMessages: pool.maxMessages,
    ...(DKIM_KEY ? { dkim: { domainName: DKIM_KEY.domain, keySelector: DKIM_KEY.selector, privateKey: DKIM_KEY.privateKeyPem } } : {}),
  });
  const started = performance.now();
  const cpu = process.cpuUsage();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await transport.sendMail({ ...message(i), messageId: `<raw${i}@acme.test>` });
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, n) }, worker));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  transport.close();
  return { perSecond: n / seconds, cpuUsPerMessage: (used.user + used.system) / n };
}

/** The delivery path: publish n jobs to JetStream and wait until the workers sent them all. */
async function pipeline(port: number, n: number, round: number): Promise<Run & { pool: { size: number; maxMessages: number } }> {
  const nats = await startNats();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-bench-delivery-"));
  const env = {
    ...process.env,
    MAILROOM_NATS_URL: nats.url,
    MAILROOM_SMTP_URL: `smtp://127.0.0.1:${port}`,
    MAILROOM_SMTP_IGNORE_TLS: "1",
    MAILROOM_DATA_DIR: dataDir,
    MAILROOM_LOG_LEVEL: "warn",
  };
  const config = loadConfig(env);
  const settings = loadDeliverySettings(env);
  const nc = await connectNats(nats.url, "bench-delivery", { noAsyncTraces: true });
  await ensureMailStreams(nc);
  const store = await openStore({ dataDir, service: "delivery" });
  // Written once, as the broadcast service does before it releases the first page.
  await (await ContentStore.open(nc, { replicas: 1 })).put("ws_bench", "broadcast:cmp_bench", compiledFrom({
    subject: "Hello {{firstName}} {{n}}",
    html: "<p>Hi {{firstName}}, this is message {{n}} of the benchmark.</p>",
    text: "Hi {{firstName}}, this is message {{n}} of the benchmark.",
    broadcast: true,
    workspaceId: "ws_bench",
  }));
  const directory = new FakeDirectory();
  directory.allow("ws_bench", "news@acme.test", DKIM_KEY);
  const runtime = await startDelivery({ config, settings, logger: silentLogger, nc, store, overrides: { directory } });

  const publisher = new DeliveryJobPublisher(jetstream(nc));
  const pages: DeliveryPageSpec[] = [];
  for (let from = 0; from < n; from += PAGE) {
    pages.push({
      pageId: `cmp_bench:${round}:${from}`,
      workspaceId: "ws_bench",
      broadcastId: "cmp_bench",
      contentRef: "broadcast:cmp_bench",
      fromEmail: "news@acme.test",
      fromName: "Acme",
      enqueuedAt: new Date(),
      recipients: Array.from({ length: Math.min(PAGE, n - from) }, (_, k) => {
        const i = from + k;
        return { deliveryId: `dlv_bench_${round}_${i}`, messageId: `bench${round}_${i}@acme.test`, email: `user${i}@example.test`, contactId: `ctc_${i}`, variablesJson: variablesJson({ firstName: "Ann", n: String(i) }) };
      }),
    });
  }
  const started = performance.now();
  const cpu = process.cpuUsage();
  // Published as the broadcast service releases windows: one page after another.
  for (const page of pages) await publisher.publishPage(page);
  const published = performance.now();
  const deadline = Date.now() + Math.max(120_000, n * 20);
  while (runtime.deliverer.counters.sent < n) {
    if (Date.now() > deadline) throw new Error(`only ${runtime.deliverer.counters.sent}/${n} sent before the deadline`);
    await new Promise((r) => setTimeout(r, 5));
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (round > 0) {
    console.log(`  published ${pages.length} page jobs (${n} recipients) in ${((published - started) / 1000).toFixed(2)} s (while the workers were already sending)`);
  }
  await runtime.stop();
  await store.close();
  await nc.close();
  await nats.stop();
  await rm(dataDir, { recursive: true, force: true });
  return {
    perSecond: n / seconds,
    cpuUsPerMessage: (used.user + used.system) / n,
    pool: { size: settings.poolSize, maxMessages: settings.maxMessagesPerConnection },
  };
}

export async function runDeliveryBench(messages = Number(process.env.MAILROOM_BENCH_DELIVERY_MESSAGES ?? 20_000)): Promise<DeliveryBenchResult> {
  const n = Math.max(100, Math.floor(messages));
  const rounds = Math.max(1, Number(process.env.MAILROOM_BENCH_DELIVERY_ROUNDS ?? 2));
  const sink = await startSink();
  try {
    console.log(`delivery: ${n} small messages per run, ${rounds} run(s) of each; sink: ${sink.kind}${DKIM_KEY ? "; DKIM-signed (RSA-2048)" : ""}`);
    // Warm both paths (JIT, connections) so neither pays start-up inside its timing.
    const warm = await pipeline(sink.port, Math.min(1_000, n), 0);
    await rawPool(sink.port, Math.min(1_000, n), warm.pool);
    // Runs alternate (raw, pipeline, pipeline, raw, …) so a change in machine load
    // during the run weighs on both sides alike.
    const raws: Run[] = [];
    const pipes: Run[] = [];
    for (let r = 1; r <= rounds; r++) {
      const order = r % 2 === 1 ? ["raw", "pipeline"] : ["pipeline", "raw"];
      for (const which of order) {
        if (which === "raw") raws.push(await rawPool(sink.port, n, warm.pool));
        else pipes.push(await pipeline(sink.port, n, r));
      }
      console.log(`  run ${r}: raw pool ${raws[r - 1].perSecond.toFixed(0)} msg/s, pipeline ${pipes[r - 1].perSecond.toFixed(0)} msg/s`);
    }
    const raw = mean(raws.map((x) => x.perSecond));
    const pipe = mean(pipes.map((x) => x.perSecond));
    const ratio = pipe / raw;
    const cpu = (runs: Run[]) => `${mean(runs.map((x) => x.cpuUsPerMessage)).toFixed(0)} µs CPU/message in this process`;
    console.log(`  raw nodemailer pool (${warm.pool.size} connections, ${warm.pool.maxMessages} messages each): ${raw.toFixed(0)} msg/s (${cpu(raws)})`);
    console.log(`  delivery pipeline (JetStream → workers → store claim/mark → SMTP pool → events): ${pipe.toFixed(0)} msg/s (${cpu(pipes)})`);
    console.log(`  ratio: ${(ratio * 100).toFixed(1)}% of the raw pool (target >= ${TARGET_RATIO * 100}%) ${ratio >= TARGET_RATIO ? "OK" : "BELOW TARGET"}`);
    return { messages: n, sink: sink.kind, rawPerSecond: raw, pipelinePerSecond: pipe, ratio };
  } finally {
    await sink.stop();
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;


if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runDeliveryBench();
  process.exit(0);
}
