/**
 * Automation benchmark (issue 29): N contacts (default 100,000; BENCH_AUTOMATION_CONTACTS)
 * enter one ACTIVE automation `event "bench" → send → wait PT1S → send` at once, through the
 * whole system as separate processes — gateway, accounts, audience, renderer, email,
 * delivery, automation, nats-server — into Postfix's smtp-sink (the harness's Node sink when it is not
 * installed, or with MAILROOM_BENCH_SINK=node).
 *
 * Timed: from the first POST /v1/events/batch (100 events a request, several at once) until
 * delivery has reported 2·N messages accepted by the sink (MailEvent SENT, counted on the
 * MAIL_EVENTS stream by subject) and the automation counts N runs COMPLETED. Steps are
 * 3 per run (send, wait, send). Not timed: loading the contacts (the audience unit's
 * BatchUpsertContacts, 1,000 a call) and their CONTACT_CREATED events draining.
 *
 * Lag, read afterwards from every run's recorded steps (GET …/runs, not timed): how late a
 * step finished after it was due — the first send after its event was posted, the second
 * after the first send's completion plus the 1 s wait. Printed as max and p99.
 *
 * Baseline in the same run: the same 2·N templated emails through POST /v1/emails/batch (50
 * a request) to the same contacts, timed the same way (first request → 2·N accepted by the
 * sink): what an automation costs over plain sends. CPU per step (automation) and per
 * message (baseline) of each process, from /proc; anonymous memory (RssAnon) peaks sampled
 * every 250 ms, the automation unit's printed on the result line.
 *
 * Run: `npm run bench automation` or `npx tsx bench/automation.ts`.
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { DIRECTORY_EVENTS_STREAM, EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import { startSink } from "./sink.js";
import { pidListeningAs, sampleAnonPeaks } from "./memory.js";
import { cpuPerUnit, formatCpu, snapshot, type CpuSnapshot } from "./cpu.js";
import { summarizeProfiles } from "./profile.js";

const WS = "ws_bench_automation";
const KEY = "mr_test_bench_automation_1";
const SENDER = "news@acme.test";
const LOAD_BATCH = 1_000;
const EVENT_BATCH = 100;
const EMAIL_BATCH = 50;
/** Requests in flight at once while enrolling or sending the baseline. */
const CONCURRENCY = 8;
const HTML = `<html><body><h1>Welcome, {{firstName}}</h1><p>Here is what to do first.</p>
<p><a href="https://acme.test/start">Get started</a></p>
<p>${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(20)}</p></body></html>`;

export interface AutomationBenchResult {
  contacts: number;
  stepsPerSecond: number;
  maxLagMs: number;
  anonMb: number | undefined;
  baselinePerSecond: number;
}


/** Messages delivery reported accepted by the sink so far (MailEvent SENT of every source). */
export async function acceptedBySink(jsm: JetStreamManager): Promise<number> {
  const info = await jsm.streams.info(EVENTS_STREAM, { subjects_filter: "mail.events.*.sent" });
  return Object.values(info.state.subjects ?? {}).reduce((t, n) => t + Number(n), 0);
}

/** Waits until every durable consumer of DIRECTORY_EVENTS (the automation unit's) has nothing pending. */
async function directoryEventsDrained(jsm: JetStreamManager, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const consumers = await jsm.consumers.list(DIRECTORY_EVENTS_STREAM).next();
    const pending = consumers.reduce((t, c) => t + c.num_pending + c.num_ack_pending, 0);
    const stored = Number((await jsm.streams.info(DIRECTORY_EVENTS_STREAM)).state.messages);
    if (pending === 0 && stored > 0) return;
    if (Date.now() > deadline) throw new Error(`DIRECTORY_EVENTS still has ${pending} pending`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Loads N contacts through the audience unit; returns their ids in order. */
async function loadContacts(sys: TestSystem, n: number): Promise<string[]> {
  const contactsClient = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  const ids = new Array<string>(n);
  let next = 0;
  const worker = async () => {
    for (let from = (next += LOAD_BATCH) - LOAD_BATCH; from < n; from = (next += LOAD_BATCH) - LOAD_BATCH) {
      const contacts = Array.from({ length: Math.min(LOAD_BATCH, n - from) }, (_, k) => ({
        email: address(from + k), firstName: `F${from + k}`, subscribed: true,
      }));
      const res = await contactsClient.batchUpsertContacts({ workspaceId: WS, contacts });
      for (const r of res.results) {
        if (!r.ok || !r.contact) throw new Error(`contact ${from + r.index} refused: ${r.error?.message}`);
        ids[from + r.index] = r.contact.id;
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return ids;
}

const address = (i: number) => `c${i}@example.test`;

/** Sends `count` requests, CONCURRENCY at a time; each must answer 200 and pass `check`. */
async function inParallel(count: number, request: (i: number) => Promise<{ status: number; body: any }>, check: (body: any, i: number) => void) {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const res = await request(i);
      if (res.status !== 200) throw new Error(`request ${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
      check(res.body, i);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

/** Polls until the sink has accepted `target` messages in all and `done()` holds; returns when the last of them happened. */
export async function waitUntil(jsm: JetStreamManager, target: number, label: string, started: number, done: () => Promise<boolean> = async () => true): Promise<number> {
  const deadline = Date.now() + Math.max(600_000, target * 10);
  let last = { accepted: -1, at: performance.now() };
  let report = performance.now();
  for (;;) {
    const accepted = await acceptedBySink(jsm);
    if (accepted !== last.accepted) last = { accepted, at: performance.now() };
    // `done` also runs before the target is reached: it throws when the runs went wrong.
    if ((await done()) && accepted >= target) return Math.max(last.at, performance.now() - 250);
    if (Date.now() > deadline) throw new Error(`${label}: ${accepted}/${target} accepted before the deadline`);
    // A stall is a failure, not a slow machine: nothing more accepted for a minute.
    if (performance.now() - last.at > 60_000 && !(accepted >= target)) throw new Error(`${label}: stalled at ${accepted}/${target} accepted`);
    if (performance.now() - report > 15_000) {
      report = performance.now();
      console.log(`  … ${label}: ${accepted}/${target} accepted after ${((report - started) / 1000).toFixed(0)} s`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] : 0);

export async function runAutomationBench(contacts = Number(process.env.BENCH_AUTOMATION_CONTACTS ?? 100_000)): Promise<AutomationBenchResult> {
  const n = Math.max(100, Math.floor(contacts));
  const sink = await startSink();
  const profileDir = process.env.BENCH_PROFILE === "1" ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
  let sys: TestSystem | undefined;
  let nc: Awaited<ReturnType<typeof connect>> | undefined;
  try {
    console.log(`automation: ${n} contacts enter \`event "bench" → send → wait PT1S → send\` at once; sink: ${sink.kind}`);
    sys = await startSystem({
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "automation", "gateway"],
      bootstrap: {
        workspaces: [{
          id: WS, name: "Bench", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          // A verified address signs nothing (no DKIM), as in the broadcast benchmark.
          verifiedEmails: [SENDER], members: ["owner@acme.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: n * 4 + 1_000, sendingAccountNew: false,
          templates: ["bench-first", "bench-second"].map((name) => ({ name, subject: `${name} for {{firstName}}`, html: HTML, fromEmail: SENDER, fromName: "Acme" })),
        }],
      },
      env: {
        MAILROOM_SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
        MAILROOM_SMTP_IGNORE_TLS: "1",
        MAILROOM_LOG_LEVEL: "warn",
        // BENCH_PROFILE=1: every unit runs with --cpu-prof; their hottest functions are printed at the end.
        ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
      },
    });
    const system = sys;
    const api = (method: string, path: string, body?: unknown) => system.api(method, path, { key: KEY, body });
    nc = await connect({ servers: sys.nats.url });
    const jsm = await jetstreamManager(nc);

    const loadStarted = performance.now();
    const ids = await loadContacts(sys, n);
    await directoryEventsDrained(jsm, Math.max(300_000, n * 3));
    console.log(`  loaded ${n} contacts and drained their CONTACT_CREATED events in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s (not timed)`);
    const indexOf = new Map(ids.map((id, i) => [id, i]));

    const created = await api("POST", "/v1/automations", {
      name: "Bench", trigger: { type: "event", name: "bench" },
      steps: [
        { id: "first", type: "send", template: "bench-first" },
        { id: "pause", type: "wait", duration: "PT1S" },
        { id: "second", type: "send", template: "bench-second" },
      ],
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    const id = created.body.automation.id as string;
    const activated = await api("POST", `/v1/automations/${id}/activate`, {});
    if (activated.status !== 200) throw new Error(`activate: ${activated.status} ${JSON.stringify(activated.body)}`);

    const pids = new Map(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
    pids.set("nats-server", await pidListeningAs("nats-server", sys.nats.port));
    const cpuOf = (snap: CpuSnapshot) => new Map([...snap].filter(([name]) => name !== "smtp-sink"));

    // --- the automation ---
    const acceptedBefore = await acceptedBySink(jsm);
    const anon = sampleAnonPeaks(pids);
    const cpuBefore = snapshot(Object.fromEntries(pids));
    const postedAt = new Array<number>(n);
    const started = performance.now();
    await inParallel(Math.ceil(n / EVENT_BATCH), (b) => {
      const from = b * EVENT_BATCH;
      const events = Array.from({ length: Math.min(EVENT_BATCH, n - from) }, (_, k) => ({ event: "bench", identify: { email: address(from + k) }, messageId: `bench-${from + k}` }));
      return api("POST", "/v1/events/batch", { events });
    }, (body, b) => {
      if (body.failed) throw new Error(`events batch ${b}: ${JSON.stringify(body.errors).slice(0, 500)}`);
      const at = Date.now();
      for (let k = b * EVENT_BATCH; k < Math.min(n, (b + 1) * EVENT_BATCH); k++) postedAt[k] = at;
    });
    const enrolSeconds = (performance.now() - started) / 1000;
    const completed = async () => {
      const runs = (await api("GET", `/v1/automations/${id}`)).body.automation?.runs ?? {};
      if (runs.exited > 0) {
        const [sample] = (await api("GET", `/v1/automations/${id}/runs?status=EXITED&limit=1`)).body.runs.items;
        throw new Error(`${runs.exited} runs EXITED, e.g. ${JSON.stringify(sample)}`);
      }
      return (runs.completed ?? 0) >= n;
    };
    const finished = await waitUntil(jsm, acceptedBefore + 2 * n, "automation", started, completed);
    const seconds = (finished - started) / 1000;
    const cpuAfter = snapshot(Object.fromEntries(pids));
    await anon.stop();
    const stepsPerSecond = (3 * n) / seconds;
    const perStep = cpuPerUnit(cpuOf(cpuBefore), cpuOf(cpuAfter), 3 * n);

    // Lag from every run's record (not timed).
    const lags: number[] = [];
    let cursor = "";
    let runsRead = 0;
    for (;;) {
      const page = (await api("GET", `/v1/automations/${id}/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).body.runs;
      for (const run of page.items) {
        runsRead++;
        const steps = Object.fromEntries(run.steps.map((s: any) => [s.stepId, s]));
        const first = Date.parse(steps.first?.completedAt);
        const second = Date.parse(steps.second?.completedAt);
        const i = indexOf.get(run.contactId);
        if (i !== undefined && Number.isFinite(first)) lags.push(Math.max(0, first - postedAt[i]));
        if (Number.isFinite(first) && Number.isFinite(second)) lags.push(Math.max(0, second - (first + 1_000)));
      }
      if (!page.hasMore) break;
      cursor = page.cursor;
    }
    lags.sort((a, b) => a - b);
    const maxLag = lags.at(-1) ?? 0;

    // --- the baseline: the same 2·N emails through POST /v1/emails/batch ---
    const baseBefore = await acceptedBySink(jsm);
    const baseCpuBefore = snapshot(Object.fromEntries(pids));
    const baseStarted = performance.now();
    await inParallel(Math.ceil((2 * n) / EMAIL_BATCH), (b) => {
      const from = b * EMAIL_BATCH;
      const emails = Array.from({ length: Math.min(EMAIL_BATCH, 2 * n - from) }, (_, k) => {
        const i = (from + k) % n;
        return { template: from + k < n ? "bench-first" : "bench-second", to: address(i), variables: { firstName: `F${i}` } };
      });
      return api("POST", "/v1/emails/batch", { emails });
    }, (body, b) => {
      if (body.failed?.length) throw new Error(`emails batch ${b}: ${JSON.stringify(body.failed).slice(0, 500)}`);
    });
    const baseFinished = await waitUntil(jsm, baseBefore + 2 * n, "baseline", baseStarted);
    const baseSeconds = (baseFinished - baseStarted) / 1000;
    const baseCpuAfter = snapshot(Object.fromEntries(pids));
    const baselinePerSecond = (2 * n) / baseSeconds;
    const perMessage = cpuPerUnit(cpuOf(baseCpuBefore), cpuOf(baseCpuAfter), 2 * n);

    const automationAnon = anon.peaks.get("automation");
    const messagesPerSecond = (2 * n) / seconds;
    console.log(`  enrolment: ${n} events posted in ${enrolSeconds.toFixed(1)} s (${Math.round(n / enrolSeconds)} events/s, ${EVENT_BATCH} a request); ${runsRead} runs read for the lag`);
    console.log(`  automation: ${3 * n} steps, ${2 * n} messages in ${seconds.toFixed(1)} s; baseline: ${2 * n} messages in ${baseSeconds.toFixed(1)} s`);
    console.log(`automation: ${Math.round(stepsPerSecond)} steps/s, max lag ${Math.round(maxLag)} ms, anon ${automationAnon ?? "?"} MB`);
    console.log(`  lag (ms): p50 ${percentile(lags, 50)}, p99 ${percentile(lags, 99)}, max ${maxLag} over ${lags.length} steps`);
    console.log(`baseline (POST /v1/emails/batch, same ${2 * n} emails): ${Math.round(baselinePerSecond)} msg/s`);
    console.log(`ratio: automation sends ${Math.round(messagesPerSecond)} msg/s = ${((messagesPerSecond / baselinePerSecond) * 100).toFixed(0)}% of the baseline`);
    console.log(`cpu per step (ms), automation: ${formatCpu(perStep)}`);
    console.log(`cpu per message (ms), automation (2 sends + 1 wait): ${formatCpu(perStep.map((r) => ({ name: r.name, ms: (r.ms * 3) / 2 })))}`);
    console.log(`cpu per message (ms), baseline: ${formatCpu(perMessage)}`);
    console.log(`anon peaks (MB) during the automation: ${[...anon.peaks].map(([name, mb]) => `${name} ${mb}`).join(", ")}`);
    return { contacts: n, stepsPerSecond, maxLagMs: maxLag, anonMb: automationAnon, baselinePerSecond };
  } catch (err) {
    if (sys) for (const unit of ["automation", "email", "delivery"] as const) console.error(`${unit} log:\n${await sys.log(unit, 30)}`);
    throw err;
  } finally {
    await nc?.close();
    const unitPids = sys ? Object.fromEntries(sys.processes.units.map((u) => [u.name, u.child.pid ?? 0])) : {};
    await sys?.stop();
    await sink.stop();
    if (profileDir) {
      console.log(`cpu profiles: ${profileDir}`);
      for (const line of await summarizeProfiles(profileDir, unitPids, 14)) console.log(line);
    }
  }
}


if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runAutomationBench();
  process.exit(0);
}
