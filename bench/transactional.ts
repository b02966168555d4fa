/**
 * Transactional benchmark (issue 46): N templated emails (default 20,000;
 * BENCH_TRANSACTIONAL_EMAILS) through the whole system as separate processes — gateway,
 * accounts, audience, renderer, email, delivery, nats-server — into Postfix's smtp-sink (the harness's
 * Node sink when it is not installed, or with MAILROOM_BENCH_SINK=node), two ways in turn:
 *
 * - batches: `POST /v1/emails/batch`, 50 emails a request, 8 requests in flight;
 * - single sends: `POST /v1/emails`, 64 requests in flight (N/2 of them).
 *
 * Each is timed from its first request until delivery has reported every one of its messages
 * accepted by the sink (MailEvent SENT on the MAIL_EVENTS stream): acceptance, compile, store,
 * queue, render, SMTP — the whole way. Beside them, in the same run, a raw nodemailer pool
 * sends the same message to the same sink (the pool size and messages per connection are
 * delivery's). Printed: each way's msg/s and its share of the raw pool, and the CPU each
 * process spent per message (from /proc; the sink left out) with their total.
 *
 * Goal (issue 46): batches ≥ 100 % of the raw pool with total CPU per message ≤ 1.0 ms.
 * `BENCH_PROFILE=1` starts every unit with --cpu-prof and prints each one's hottest functions.
 *
 * Run: `npm run bench transactional` or `npx tsx bench/transactional.ts`.
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { loadDeliverySettings } from "../services/delivery/src/settings.js";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import { startSink } from "./sink.js";
import { pidListeningAs, sampleAnonPeaks } from "./memory.js";
import { cpuPerUnit, formatCpu, snapshot, type CpuSnapshot } from "./cpu.js";
import { summarizeProfiles } from "./profile.js";
import { acceptedBySink, waitUntil } from "./automation.js";
import { rawPool } from "./broadcast.js";

const WS = "ws_bench_transactional";
const KEY = "mr_test_bench_transactional_1";
const SENDER = "receipts@acme.test";
const BATCH = 50;
const BATCH_CONCURRENCY = 8;
const SINGLE_CONCURRENCY = 64;
const TEMPLATE = "receipt";
const SUBJECT = "Your receipt, {{firstName}}";
const HTML = `<html><body><h1>Thanks for your order, {{firstName}}</h1><p>Order {{orderId}} is on its way.</p>
<p><a href="https://acme.test/orders">Track your order</a></p>
<p>${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(20)}</p></body></html>`;
const TARGET = { ratio: 1, cpuMs: 1 };

export interface TransactionalBenchResult {
  emails: number;
  batchPerSecond: number;
  singlePerSecond: number;
  rawPerSecond: number;
  batchCpuMs: number;
  singleCpuMs: number;
}

const address = (i: number) => `t${i}@example.test`;
const variables = (i: number) => ({ firstName: `F${i}`, orderId: `A-${i}` });

/** Runs `count` requests, `concurrency` at a time; each must answer `status`. */
async function inParallel(count: number, concurrency: number, status: number, request: (i: number) => Promise<{ status: number; body: any }>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const res = await request(i);
      if (res.status !== status) throw new Error(`request ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
      if (res.body?.failed?.length) throw new Error(`request ${i}: ${JSON.stringify(res.body.failed).slice(0, 500)}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

export async function runTransactionalBench(emails = Number(process.env.BENCH_TRANSACTIONAL_EMAILS ?? 20_000)): Promise<TransactionalBenchResult> {
  const n = Math.max(BATCH, Math.floor(emails / BATCH) * BATCH);
  const singles = Math.max(64, Math.floor(n / 2));
  const sink = await startSink();
  const settings = loadDeliverySettings(process.env);
  const pool = { size: settings.poolSize, maxMessages: settings.maxMessagesPerConnection };
  const profileDir = process.env.BENCH_PROFILE === "1" ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
  let sys: TestSystem | undefined;
  let nc: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    console.log(`transactional: ${n} templated emails in batches of ${BATCH}, then ${singles} single sends; sink: ${sink.kind}`);
    sys = await startSystem({
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      bootstrap: {
        workspaces: [{
          id: WS, name: "Bench", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          // A verified address signs nothing (no DKIM), as in the broadcast benchmark.
          verifiedEmails: [SENDER], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: (n + singles) * 2 + 1_000, sendingAccountNew: false,
          templates: [{ name: TEMPLATE, subject: SUBJECT, html: HTML, fromEmail: SENDER, fromName: "Acme" }],
        }],
      },
      env: {
        MAILROOM_SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        MAILROOM_SMTP_IGNORE_TLS: "1",
        MAILROOM_LOG_LEVEL: "warn",
        ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
      },
    });
    const system = sys;
    const api = (method: string, path: string, body?: unknown) => system.api(method, path, { key: KEY, body });
    nc = await connect({ servers: sys.nats.url });
    const jsm = await jetstreamManager(nc);
    const pids = new Map(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    pids.set("nats-server", await pidListeningAs("nats-server", sys.nats.port));
    const cpuOf = (snap: CpuSnapshot) => new Map([...snap].filter(([name]) => name !== "smtp-sink"));

    // Warm-up (not timed): the first sends compile the template, open pools and JIT the paths.
    await inParallel(10, BATCH_CONCURRENCY, 200, (b) =>
      api("POST", "/v1/emails/batch", { emails: Array.from({ length: BATCH }, (_, k) => ({ template: TEMPLATE, to: address(b * BATCH + k), variables: variables(k) })) }));
    await waitUntil(jsm, 10 * BATCH, "warm-up", performance.now());

    const anon = sampleAnonPeaks(pids);
    const measure = async (label: string, count: number, send: () => Promise<void>) => {
      const before = await acceptedBySink(jsm);
      const cpuBefore = snapshot(Object.fromEntries(pids));
      const started = performance.now();
      await send();
      const finished = await waitUntil(jsm, before + count, label, started);
      const perMessage = cpuPerUnit(cpuOf(cpuBefore), cpuOf(snapshot(Object.fromEntries(pids))), count);
      return { perSecond: count / ((finished - started) / 1000), perMessage, totalMs: perMessage.reduce((t, r) => t + r.ms, 0) };
    };
    const batches = await measure("batches", n, () =>
      inParallel(n / BATCH, BATCH_CONCURRENCY, 200, (b) =>
        api("POST", "/v1/emails/batch", { emails: Array.from({ length: BATCH }, (_, k) => ({ template: TEMPLATE, to: address(b * BATCH + k), variables: variables(b * BATCH + k) })) })));
    const single = await measure("single sends", singles, () =>
      inParallel(singles, SINGLE_CONCURRENCY, 200, (i) => api("POST", "/v1/emails", { template: TEMPLATE, to: address(n + i), variables: variables(n + i) })));
    await anon.stop();

    const unitPids = Object.fromEntries(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    await nc.close();
    nc = undefined;
    await sys.stop();
    sys = undefined;
    if (profileDir) {
      console.log(`cpu profiles: ${profileDir}`);
      for (const line of await summarizeProfiles(profileDir, unitPids, 14)) console.log(line);
    }

    // The same message from a raw pool, with the system stopped (as in the broadcast benchmark).
    const message = {
      subject: SUBJECT.replace("{{firstName}}", "F1"),
      html: HTML.replace("{{firstName}}", "F1").replace("{{orderId}}", "A-1"),
      text: "Thanks for your order, F1. Order A-1 is on its way.",
    };
    const rawN = Math.min(n, 20_000);
    await rawPool(sink.port, Math.min(1_000, rawN), pool, 256, undefined, message); // warm-up
    const rawPerSecond = await rawPool(sink.port, rawN, pool, 256, undefined, message);

    const pct = (x: number) => `${((x / rawPerSecond) * 100).toFixed(0)}% of the raw pool`;
    console.log(`batches: ${Math.round(batches.perSecond)} msg/s end to end (first request → last message accepted by the sink), ${pct(batches.perSecond)}`);
    console.log(`single sends: ${Math.round(single.perSecond)} msg/s end to end, ${pct(single.perSecond)}`);
    console.log(`raw pool: ${Math.round(rawPerSecond)} msg/s (${rawN} messages, ${pool.size} connections)`);
    console.log(`cpu per message (ms), batches: ${formatCpu(batches.perMessage)}`);
    console.log(`cpu per message (ms), single sends: ${formatCpu(single.perMessage)}`);
    console.log(`anon peaks (MB): ${[...anon.peaks].map(([name, mb]) => `${name} ${mb}`).join(", ")}`);
    const met = batches.perSecond >= TARGET.ratio * rawPerSecond && batches.totalMs <= TARGET.cpuMs;
    console.log(`target (batches) >= 100% of the raw pool with total CPU per message <= ${TARGET.cpuMs.toFixed(1)} ms: ${met ? "met" : "NOT met"}`);
    return { emails: n, batchPerSecond: batches.perSecond, singlePerSecond: single.perSecond, rawPerSecond, batchCpuMs: batches.totalMs, singleCpuMs: single.totalMs };
  } catch (err) {
    if (sys) for (const unit of ["email", "delivery", "gateway"] as const) console.error(`${unit} log:\n${await sys.log(unit, 30)}`);
    throw err;
  } finally {
    await nc?.close();
    await sys?.stop();
    await sink.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runTransactionalBench();
  process.exit(0);
}
