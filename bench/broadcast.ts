/**
 * Broadcast benchmark: one ASAP broadcast to N subscribed contacts (default 100,000;
 * BENCH_BROADCAST_CONTACTS, e.g. 1000000) through the whole system as separate processes —
 * gateway, accounts, audience, renderer, broadcast, delivery, nats-server — into Postfix's smtp-sink,
 * beside a raw nodemailer pool sending the same kind of message to the same sink in the
 * same run.
 *
 * Timed: from the schedule request (POST /v1/broadcasts/:id/schedule, no sendAt) until the
 * broadcast's `sent` counter reaches N, i.e. the last message accepted by the sink (each
 * `sent` is an SMTP 250 reported by delivery). Not timed: loading the contacts (the
 * audience unit's BatchUpsertContacts RPC, 1,000 a call) and creating the draft.
 *
 * Also prints the CPU each process spent per message while sending (`cpu per message (ms):`,
 * a process's workers included) and each process's peak resident memory (VmHWM) with its
 * peak anonymous memory (RssAnon, sampled every 250 ms: heap and buffers, not mapped files
 * such as the store's pages). Then, not timed with the broadcast: the contacts CSV export
 * (GET /v1/contacts/export) of the same N contacts, its rows counted, with the audience unit's
 * and gateway's anonymous peaks while it streamed.
 *
 * Run: `npm run bench broadcast` or `npx tsx bench/broadcast.ts`. Environment:
 * BENCH_BROADCAST_CONTACTS (100000), BENCH_BROADCAST_TEMPLATE=liquid (the message in Liquid:
 * compiled once, rendered per recipient), BENCH_BROADCAST_RAW_MESSAGES (messages for the raw pool,
 * default min(N, 20000): a rate, so a shorter run measures the same), MAILROOM_BENCH_SINK=node
 * (the harness's Node sink instead of smtp-sink); MAILROOM_SMTP_POOL_SIZE and the other
 * delivery settings apply to both sides. BENCH_MEMORY_TRACE=1 prints, every 10 s while sending,
 * each unit's V8 heap (used / total) and external memory from its /metrics next to its RssAnon:
 * what an anonymous peak is made of (a live set, or garbage the heap has not collected yet).
 *
 * BENCH_STORE=postgres: every unit runs on a PostgreSQL database made for the run (dropped at
 * the end; BENCH_POSTGRES_POOL connections per process, default 10), and the CPU per message
 * gets a `postgres` row: the backends of that database while sending, read from /proc
 * (bench/postgres.ts), with their RssAnon peak beside the units' anonymous peaks.
 */
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import nodemailer from "nodemailer";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { loadDeliverySettings } from "../services/delivery/src/settings.js";
import { startSink } from "./sink.js";
import { anonMb, pidListeningAs, sampleAnonPeaks } from "./memory.js";
import { cpuPerUnit, formatCpu, snapshot } from "./cpu.js";
import { summarizeProfiles } from "./profile.js";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { DIRECTORY_EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import { benchStore, createBenchDatabase, describePostgresCpu, poolNote, postgresCpuMeter, postgresPerUnit, postgresUnitEnv, type BenchDatabase } from "./postgres.js";

/** Seconds until the contact event stream (DIRECTORY_EVENTS) holds at least `n` messages. */
async function waitForAnnounced(natsUrl: string, n: number): Promise<number> {
  const started = performance.now();
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + Math.max(300_000, n * 2);
    for (;;) {
      const stored = await jsm.streams.info(DIRECTORY_EVENTS_STREAM).then((i) => Number(i.state.messages), () => 0);
      if (stored >= n) return (performance.now() - started) / 1000;
      if (Date.now() > deadline) throw new Error(`only ${stored}/${n} contact events published`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await nc.close();
  }
}

const WS = "ws_bench_broadcast";
const KEY = "mr_test_bench_broadcast_1";
const BATCH = 1_000;
const LOREM = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
const HTML = `<html><body><h1>Spring news</h1><p>Hi {{firstName}}, here is what is new this month.</p>
<p><a href="https://acme.test/spring">Read the spring issue</a> · <a href="https://acme.test/pricing">Pricing</a></p>
<p>${LOREM.repeat(20)}</p></body></html>`;
/**
 * BENCH_BROADCAST_TEMPLATE=liquid: the same message written in Liquid (DESIGN §10.2), a fallback
 * filter, a condition and a loop, rendering for each contact what HTML renders for it.
 */
const LIQUID = process.env.BENCH_BROADCAST_TEMPLATE === "liquid";
const LIQUID_HTML = HTML.replace("{{firstName}}", '{{ firstName | default: "there" }}')
  .replace("<p><a ", "{% if firstName != blank %}<p><a ")
  .replace("</a></p>", "</a></p>{% endif %}")
  .replace(LOREM.repeat(20), `{% for i in (1..20) %}${LOREM}{% endfor %}`);

export interface BroadcastBenchResult {
  contacts: number;
  perSecond: number;
  rawPerSecond: number;
  ratio: number;
  maxRssMb: Record<string, number>;
}


/** Peak resident set (VmHWM) of a process in MB, or undefined once it is gone. */
async function peakRssMb(pid: number | undefined): Promise<number | undefined> {
  if (!pid) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}



/** `name heapUsed/heapTotal ext N anon N` (MB) for each unit, read from its /metrics. */
function traceMemory(units: { name: string; port: number; pid?: number }[], everyMs = 10_000) {
  const metric = (text: string, name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, "m").exec(text);
    return m ? Math.round(Number(m[1]) / 1048576) : "?";
  };
  const sample = async () => {
    const parts = await Promise.all(units.map(async (u) => {
      const text = await fetch(`http://127.0.0.1:${u.port}/metrics`).then((r) => r.text(), () => "");
      return `${u.name} ${metric(text, "nodejs_heap_size_used_bytes")}/${metric(text, "nodejs_heap_size_total_bytes")} ext ${metric(text, "nodejs_external_memory_bytes")} anon ${await anonMb(u.pid)}`;
    }));
    console.log(`  memory (MB, heap used/total): ${parts.join(" · ")}`);
  };
  const timer = setInterval(() => void sample(), everyMs);
  return { stop: () => clearInterval(timer) };
}


type DkimKey = { domainName: string; keySelector: string; privateKey: string };

/** What the raw pool sends: by default a message like the broadcast's. */
export interface RawMessage {
  subject: string;
  html: string;
  text: string;
}

/** A raw nodemailer pool sending `n` messages like the broadcast's (or `message`), at most `window` waiting at once (signed with `dkim` when given). */
export async function rawPool(port: number, n: number, pool: { size: number; maxMessages: number }, window = 256, dkim?: DkimKey, message?: RawMessage): Promise<number> {
  const transport = nodemailer.createTransport({
    host: "127.0.0.1", port, secure: false, ignoreTLS: true, pool: true,
    maxConnections: pool.size, maxMessages: pool.maxMessages,
  });
  const html = message?.html ?? HTML.replace("{{firstName}}", "Ann");
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await transport.sendMail({
        from: { name: "Acme News", address: "news@acme.test" },
        to: `c${i}@example.test`,
        subject: message?.subject ?? `Spring news for Ann`,
        html,
        text: message?.text ?? "Hi Ann, here is what is new this month.",
        messageId: `<raw${i}@acme.test>`,
        ...(dkim ? { dkim } : {}),
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, n) }, worker));
  const seconds = (performance.now() - started) / 1000;
  transport.close();
  return n / seconds;
}

async function loadContacts(sys: TestSystem, n: number): Promise<number> {
  const contactsClient = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    for (let from = (next += BATCH) - BATCH; from < n; from = (next += BATCH) - BATCH) {
      const contacts = Array.from({ length: Math.min(BATCH, n - from) }, (_, k) => ({
        email: `c${from + k}@example.test`, firstName: `F${from + k}`, subscribed: true,
      }));
      const res = await contactsClient.batchUpsertContacts({ workspaceId: WS, contacts });
      const failed = res.results?.find((r) => !r.ok);
      if (failed) throw new Error(`contact ${from + failed.index} refused: ${failed.error?.message}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return (performance.now() - started) / 1000;
}

export async function runBroadcastBench(contacts = Number(process.env.BENCH_BROADCAST_CONTACTS ?? 100_000)): Promise<BroadcastBenchResult> {
  const n = Math.max(100, Math.floor(contacts));
  const sink = await startSink();
  const settings = loadDeliverySettings(process.env);
  const pool = { size: settings.poolSize, maxMessages: settings.maxMessagesPerConnection };
  let sys: TestSystem | undefined;
  // BENCH_BROADCAST_DKIM=1: Mailroom signs with the domain's key and the raw pool with the same key.
  const signing = /^(1|true|yes)$/.test(process.env.BENCH_BROADCAST_DKIM ?? "");
  let dkim: DkimKey | undefined;
  // BENCH_PROFILE=1: every unit runs with --cpu-prof; their hottest functions are printed at the end.
  const profileDir = process.env.BENCH_PROFILE === "1" ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
  // BENCH_STORE=postgres: every unit on a database of the run's own (dropped at the end).
  let database: BenchDatabase | undefined;
  try {
    console.log(`broadcast: ${n} subscribed contacts, one ASAP broadcast${LIQUID ? " written in Liquid (BENCH_BROADCAST_TEMPLATE=liquid)" : ""}; sink: ${sink.kind}; DKIM: ${signing ? "both sides sign (RSA-2048)" : "neither side signs (BENCH_BROADCAST_DKIM=1 to sign)"}`);
    if (benchStore() === "postgres") {
      database = await createBenchDatabase();
      console.log(`  store: PostgreSQL (BENCH_STORE=postgres), database ${database.name}, ${poolNote()}`);
    }
    sys = await startSystem({
      ...(database ? { store: "embedded" as const } : {}),
      smtp: false,
      units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"],
      bootstrap: {
        workspaces: [{
          id: WS, name: "Bench", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          // A verified domain gets a DKIM key, so every message is signed (RSA-2048, about a
          // millisecond of CPU each); a verified address signs nothing, like the raw pool.
          ...(signing ? { verifiedDomains: ["acme.test"] } : { verifiedEmails: ["news@acme.test"] }),
          members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: n * 2, sendingAccountNew: false,
        }],
      },
      env: {
        MAILROOM_SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        MAILROOM_SMTP_IGNORE_TLS: "1",
        MAILROOM_LOG_LEVEL: "warn",
        ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
        ...(database ? postgresUnitEnv(database) : {}),
      },
    });
    if (signing) {
      const accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
      const key = (await accounts.checkSender({ workspaceId: WS, from: "news@acme.test" })).dkim;
      if (!key?.privateKeyPem) throw new Error("the bench domain has no DKIM key");
      dkim = { domainName: key.domain, keySelector: key.selector, privateKey: key.privateKeyPem };
    }
    const loadSeconds = await loadContacts(sys, n);
    console.log(`  loaded ${n} contacts through BatchUpsertContacts in ${loadSeconds.toFixed(1)} s (not timed)`);
    // Loading ends when the audience unit has announced every contact (CONTACT_CREATED on
    // DIRECTORY_EVENTS, published from its outbox after each write): not part of the broadcast.
    const announceSeconds = await waitForAnnounced(sys.nats.url, n);
    console.log(`  … and their ${n} CONTACT_CREATED events published ${announceSeconds.toFixed(1)} s later (not timed)`);

    const api = (method: string, path: string, body?: unknown) => sys!.api(method, path, { key: KEY, body });
    const created = await api("POST", "/v1/broadcasts", {
      name: "Bench",
      subject: LIQUID ? 'Spring news for {{ firstName | default: "you" }}' : "Spring news for {{firstName}}",
      previewText: LIQUID ? "What is new, {{ firstName | default: \"friend\" }}" : "What is new, {{firstName}}",
      fromEmail: "news@acme.test", fromName: "Acme News", html: LIQUID ? LIQUID_HTML : HTML, audience: { all: true },
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.broadcast.id as string;

    const pids = new Map(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    pids.set("nats-server", await pidListeningAs("nats-server", sys.nats.port));
    pids.set("smtp-sink", sink.pid);
    const anon = sampleAnonPeaks(pids);
    const trace = process.env.BENCH_MEMORY_TRACE === "1"
      ? traceMemory(sys.processes.units.filter((u) => u.name !== "gateway" && u.name !== "inbound").map((u) => ({ name: u.name, port: sys!.ports[u.name as keyof TestSystem["ports"]], pid: u.child.pid })))
      : undefined;
    const cpuBefore = snapshot(Object.fromEntries(pids));
    const pgMeter = database ? postgresCpuMeter(database.name) : undefined;
    pgMeter?.start();
    const started = performance.now();
    const scheduled = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    if (scheduled.status !== 200) throw new Error(`schedule: ${scheduled.status} ${JSON.stringify(scheduled.body)}`);
    const deadline = Date.now() + Math.max(600_000, n * 20);
    let last = { sent: 0, at: performance.now() };
    let lastReport = performance.now();
    for (;;) {
      const b = (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
      const sent = b.progress.sent as number;
      if (sent !== last.sent) last = { sent, at: performance.now() };
      if (sent >= n) break;
      if (b.progress.failed > 0) {
        const tail = async (unit: "broadcast" | "delivery") => `${unit}:\n${(await sys!.log(unit)).split("\n").slice(-15).join("\n")}`;
        throw new Error(`${b.progress.failed} messages failed\n${await tail("broadcast")}\n${await tail("delivery")}`);
      }
      if (Date.now() > deadline) throw new Error(`only ${sent}/${n} sent before the deadline`);
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        console.log(`  … ${sent}/${n} sent after ${((lastReport - started) / 1000).toFixed(0)} s (released ${b.progress.released}, status ${b.status})`);
      }
      // Polled gently: the gateway's CPU counts in the per-message figures.
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = (last.at - started) / 1000;
    const perSecond = n / seconds;

    const cpuAfter = snapshot(Object.fromEntries(pids));
    const pgCpu = pgMeter?.stop();
    await anon.stop();
    trace?.stop();
    const cpu = [...cpuBefore].map(([name, start]) => `${name} ${((cpuAfter.get(name) ?? start) - start).toFixed(1)} s`);
    // The sink is the other side of the wire, not Mailroom: left out of the per-message total.
    const perMessage = cpuPerUnit(new Map([...cpuBefore].filter(([name]) => name !== "smtp-sink")), cpuAfter, n);
    if (pgCpu) {
      perMessage.push({ name: "postgres", ms: postgresPerUnit(pgCpu, n).ms });
      perMessage.sort((a, b) => b.ms - a.ms);
      cpu.push(`postgres ${pgCpu.seconds.toFixed(1)} s`);
    }
    const rss: Record<string, number> = {};
    for (const unit of sys.processes.units) {
      const mb = await peakRssMb(unit.child.pid);
      if (mb !== undefined) rss[unit.name] = mb;
    }
    const natsMb = await peakRssMb(await pidListeningAs("nats-server", sys.nats.port));
    if (natsMb !== undefined) rss["nats-server"] = natsMb;
    const sinkMb = await peakRssMb(sink.pid);
    if (sinkMb !== undefined) rss["smtp-sink"] = sinkMb;

    // The contacts CSV export over the same audience (not in the broadcast's figures): rows
    // streamed, and the audience unit's and gateway's anonymous peaks while it ran.
    const exportPeaks = sampleAnonPeaks(new Map([["audience", pids.get("audience")], ["gateway", pids.get("gateway")]]));
    const exportStarted = performance.now();
    const exported = await fetch(`${sys.gatewayUrl}/v1/contacts/export`, { headers: { authorization: `Bearer ${KEY}` } });
    let lines = 0;
    for await (const chunk of exported.body as unknown as AsyncIterable<Uint8Array>) for (const byte of chunk) if (byte === 10) lines++;
    await exportPeaks.stop();
    const exportLine = `contacts export: ${lines - 1} rows (HTTP ${exported.status}) in ${((performance.now() - exportStarted) / 1000).toFixed(1)} s; anon peaks while it streamed: audience ${exportPeaks.peaks.get("audience")} MB, gateway ${exportPeaks.peaks.get("gateway")} MB`;

    const unitPids = Object.fromEntries(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    await sys.stop();
    sys = undefined;
    if (profileDir) {
      console.log(`cpu profiles: ${profileDir}`);
      for (const line of await summarizeProfiles(profileDir, unitPids, 14)) console.log(line);
    }
    const rawN = Math.min(n, Number(process.env.BENCH_BROADCAST_RAW_MESSAGES ?? 20_000));
    await rawPool(sink.port, Math.min(1_000, rawN), pool, 256, dkim); // warm-up
    const rawPerSecond = await rawPool(sink.port, rawN, pool, 256, dkim);
    const ratio = perSecond / rawPerSecond;

    console.log(`  ${n} messages in ${seconds.toFixed(1)} s; raw pool: ${rawN} messages, ${pool.size} connections`);
    console.log(`  CPU while sending: ${cpu.join(", ")} (2 cores shared with whatever else runs)`);
    console.log(`broadcast: ${perSecond.toFixed(0)} msg/s end to end (schedule → last message accepted by the sink)`);
    console.log(`raw pool: ${rawPerSecond.toFixed(0)} msg/s`);
    console.log(`ratio: ${(ratio * 100).toFixed(0)}% of the raw pool`);
    console.log(`cpu per message (ms): ${formatCpu(perMessage)}`);
    if (pgCpu) console.log(describePostgresCpu(pgCpu, n, "message"));
    for (const [name, mb] of Object.entries(rss)) console.log(`max RSS: ${name} ${mb} MB (anon ${anon.peaks.get(name) ?? "?"} MB)`);
    if (pgCpu) console.log(`max RSS: postgres backends (sum of RssAnon, ${pgCpu.peakBackends} at most at once; shared buffers not counted) anon ${pgCpu.peakAnonMb} MB`);
    console.log(exportLine);
    return { contacts: n, perSecond, rawPerSecond, ratio, maxRssMb: rss };
  } finally {
    await sys?.stop();
    await sink.stop();
    await database?.drop();
  }
}


if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runBroadcastBench();
  process.exit(0);
}
