/**
 * Inbound benchmark (issue 49): receiving email. N messages (default 5,000;
 * BENCH_INBOUND_MESSAGES) of about 50 KB, each a text part and one attachment, mailed over SMTP
 * on BENCH_INBOUND_CONNECTIONS parallel connections (default 8) to an inbound domain whose
 * catch-all rule is `store` — the whole receiving path: SMTP, postal-mime, the raw message and
 * the attachment to JetStream's object store, the record, the reply lookup. The system runs as
 * separate processes (accounts, audience, renderer, email, gateway, inbound, nats-server; the
 * domain is verified by MX through a DNS server on loopback).
 *
 * Printed: messages per second from the first MAIL FROM to the last 250 (the inbound unit
 * answers 250 once the message is stored), the CPU each process spent per message (from /proc;
 * this process, which speaks SMTP, left out); beside it, in the same run and system, `npm run
 * bench api`'s send path — single `POST /v1/emails` from 64 clients for BENCH_INBOUND_API_SECONDS
 * (default 5) — with its requests per second and CPU per request; and the inbound unit's
 * anonymous memory (RssAnon) peak while one message of about 34 MiB (one 25 MiB attachment,
 * just under the 35 MiB MAILROOM_INBOUND_MAX_BYTES) arrives.
 *
 * Goals (issue 49): ≥ 500 messages/s on the 2-core machine; anonymous memory under 300 MB while
 * the 35 MB message arrives.
 *
 * `BENCH_PROFILE=1` starts every unit with --cpu-prof and prints each one's hottest functions.
 *
 * Run: `npm run bench inbound` or `npx tsx bench/inbound.ts`.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import nodemailer from "nodemailer";
import { startSystem, type TestSystem } from "../test/harness/system.js";
import { startMxServer, type MxZone } from "../services/inbound/src/dns-testing.js";
import { cpuPerUnit, formatCpu, snapshot, type CpuSnapshot } from "./cpu.js";
import { anonMb, sampleAnonPeaks } from "./memory.js";
import { drive, type LoadResult } from "./api.js";
import { summarizeProfiles } from "./profile.js";

const WS = "ws_bench_inbound";
const KEY = "mr_test_bench_inbound_1";
const DOMAIN = "in.bench.test";
const MX_HOST = "mx.bench-mailroom.test";
const TARGET = { perSecond: 500, anonMb: 300 };
/** The attachment of the 50 KB messages: 36 KB of bytes, about 49 KB as base64. */
const ATTACHMENT_BYTES = 36 * 1024;
const BIG_ATTACHMENT_BYTES = 25 * 1024 * 1024;

export interface InboundBenchResult {
  messages: number;
  messageBytes: number;
  perSecond: number;
  cpuMsPerMessage: number;
  api: LoadResult;
  apiCpuMsPerRequest: number;
  bigMessageBytes: number;
  inboundAnonPeakMb: number;
}

/** base64 in 76-character lines, as MIME writes it. */
const base64Lines = (bytes: Buffer) => bytes.toString("base64").replace(/.{76}/g, "$&\r\n");

/** A message as a mail client writes one: a text part and an attachment; `i` makes its ids its own. */
function messageOf(i: number, attachment: string, filename: string): string {
  return [
    `From: Sender ${i} <sender${i}@example.test>`,
    `To: support@${DOMAIN}`,
    `Subject: Question number ${i}`,
    `Date: ${new Date().toUTCString().replace(/GMT$/, "+0000")}`,
    `Message-ID: <bench-${i}-${Date.now()}@example.test>`,
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="=_bench_boundary"',
    "",
    "--=_bench_boundary",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: 7bit",
    "",
    `Hello, this is message ${i}. ${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(20)}`,
    "",
    "--=_bench_boundary",
    `Content-Type: application/octet-stream; name="${filename}"`,
    `Content-Disposition: attachment; filename="${filename}"`,
    "Content-Transfer-Encoding: base64",
    "",
    attachment,
    "--=_bench_boundary--",
    "",
  ].join("\r\n");
}

/** Mails `count` messages over `connections` SMTP connections (a pool, as an MTA relaying to us would). */
async function mailAll(port: number, connections: number, count: number, message: (i: number) => string, offset = 0): Promise<void> {
  const transport = nodemailer.createTransport({ pool: true, host: "127.0.0.1", port, secure: false, ignoreTLS: true, maxConnections: connections, maxMessages: Infinity });
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      await transport.sendMail({ envelope: { from: `sender${offset + i}@example.test`, to: `support@${DOMAIN}` }, raw: message(offset + i) });
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(connections * 2, count) }, worker));
  } finally {
    transport.close();
  }
}

const total = (rows: { ms: number }[]) => rows.reduce((t, r) => t + r.ms, 0);

export async function runInboundBench(messages = Number(process.env.BENCH_INBOUND_MESSAGES ?? 5_000)): Promise<InboundBenchResult> {
  const n = Math.max(10, messages);
  const connections = Number(process.env.BENCH_INBOUND_CONNECTIONS ?? 8);
  const apiSeconds = Number(process.env.BENCH_INBOUND_API_SECONDS ?? 5);
  const zone: MxZone = new Map([[DOMAIN, [{ exchange: `${MX_HOST}.`, priority: 10 }]]]);
  const dns = await startMxServer(zone);
  const profileDir = process.env.BENCH_PROFILE === "1" ? await mkdtemp(path.join(os.tmpdir(), "mailroom-profile-")) : undefined;
  let sys: TestSystem | undefined;
  try {
    const attachment = base64Lines(randomBytes(ATTACHMENT_BYTES));
    const message = (i: number) => messageOf(i, attachment, `report-${i}.bin`);
    const messageBytes = Buffer.byteLength(message(0));
    console.log(`inbound: ${n} messages of ${(messageBytes / 1024).toFixed(0)} KB (one attachment) over ${connections} SMTP connections to a store rule`);
    sys = await startSystem({
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "gateway", "inbound"],
      bootstrap: {
        workspaces: [{
          id: WS, name: "Bench", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["bench.test"], members: [],
          monthlyLimit: 100_000_000, sendingAccountNew: false,
        }],
      },
      env: {
        MAILROOM_LOG_LEVEL: "warn",
        MAILROOM_RATE_LIMIT_PER_MINUTE: "100000000",
        MAILROOM_EMAIL_WORKERS: process.env.BENCH_EMAIL_WORKERS ?? "2",
        MAILROOM_INBOUND_MX_HOST: MX_HOST,
        MAILROOM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        // One sender IP (this process) hands over everything; no SpamAssassin in the path measured.
        MAILROOM_INBOUND_RATE_PER_MINUTE: "100000000",
        MAILROOM_INBOUND_SPAM_MAX_BYTES: "0",
        ...(profileDir ? { MAILROOM_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
      },
    });
    const system = sys;
    const api = (method: string, path: string, body?: unknown) => system.api(method, path, { key: KEY, body });
    const domain = await api("POST", "/v1/inbound/domains", { domain: DOMAIN });
    if (domain.status !== 201 || domain.body?.domain?.status !== "verified") throw new Error(`inbound domain: ${domain.status} ${JSON.stringify(domain.body)}`);
    const rule = await api("POST", `/v1/inbound/domains/${domain.body.domain.id}/rules`, { match: "*", action: "store" });
    if (rule.status !== 201) throw new Error(`inbound rule: ${rule.status} ${JSON.stringify(rule.body)}`);

    const pids: Record<string, number | undefined> = { ...Object.fromEntries(sys.processes.units.map((u) => [u.name as string, u.child.pid])), "nats-server": sys.nats.pid };
    const inboundPid = pids.inbound;

    // Warm-up (not measured): connections, JIT, the object store bucket.
    await mailAll(sys.ports.inbound, connections, Math.min(200, n), message, 1_000_000);

    const before: CpuSnapshot = snapshot(pids);
    const started = performance.now();
    await mailAll(sys.ports.inbound, connections, n, message);
    const seconds = (performance.now() - started) / 1000;
    const perMessage = cpuPerUnit(before, snapshot(pids), n);
    const perSecond = n / seconds;

    // Every message was stored: the newest one is listed with its attachment.
    const newest = await api("GET", `/v1/received-emails?limit=1`);
    const attachments = newest.body?.receivedEmails?.items?.[0]?.attachments;
    if (newest.status !== 200) throw new Error(`listing received emails: ${newest.status} ${JSON.stringify(newest.body).slice(0, 300)}`);

    // The send path in the same system: `npm run bench api`'s single sends, for scale.
    const body = JSON.stringify({
      from: "Bench <hello@bench.test>",
      to: "reader@example.test",
      subject: "Your receipt",
      html: '<html><body><h1>Thanks for your order</h1><p>Order <b>#1234</b> is confirmed. <a href="https://bench.test/orders/1234">View it</a>.</p></body></html>',
    });
    let apiBefore: CpuSnapshot = new Map();
    let apiAfter: CpuSnapshot = new Map();
    const apiLoad = await drive(`${sys.gatewayUrl}/v1/emails`, {
      body,
      headers: { authorization: `Bearer ${KEY}` },
      concurrency: 64,
      seconds: apiSeconds,
      warmupSeconds: 1,
      onMeasure: (phase) => (phase === "start" ? (apiBefore = snapshot(pids)) : (apiAfter = snapshot(pids))),
    });
    const apiPerRequest = cpuPerUnit(apiBefore, apiAfter, apiLoad.requests);

    // One message of about 34 MiB: the inbound unit's anonymous memory while it arrives and is stored.
    await new Promise((r) => setTimeout(r, 2_000));
    const idleMb = await anonMb(inboundPid);
    const big = messageOf(0, base64Lines(randomBytes(BIG_ATTACHMENT_BYTES)), "big.bin");
    const anon = sampleAnonPeaks(new Map([["inbound", inboundPid]]), 20);
    const bigStarted = performance.now();
    await mailAll(sys.ports.inbound, 1, 1, () => big, 2_000_000);
    const bigSeconds = (performance.now() - bigStarted) / 1000;
    await new Promise((r) => setTimeout(r, 500));
    await anon.stop();
    const peak = anon.peaks.get("inbound") ?? 0;
    if (profileDir) {
      const unitPids = Object.fromEntries(sys.processes.units.map((u) => [u.name as string, u.child.pid]));
      await sys.stop();
      sys = undefined;
      console.log(`cpu profiles: ${profileDir}`);
      for (const line of await summarizeProfiles(profileDir, unitPids, 14)) console.log(line);
    }

    const fmt = (x: number) => x.toFixed(0);
    console.log(`inbound: ${fmt(perSecond)} messages/s (${n} in ${seconds.toFixed(1)} s, first MAIL FROM → last 250)${Array.isArray(attachments) ? `; the newest stored with ${attachments.length} attachment(s)` : ""}`);
    console.log(`cpu per received message (ms): ${formatCpu(perMessage)}`);
    console.log(`send path, POST /v1/emails (64 clients, ${apiSeconds} s): ${fmt(apiLoad.perSecond)} req/s, p50 ${apiLoad.p50Ms.toFixed(1)} ms, p99 ${apiLoad.p99Ms.toFixed(1)} ms${apiLoad.errors ? `, non-200: ${JSON.stringify(apiLoad.statuses)}` : ""}`);
    console.log(`cpu per sent email (ms): ${formatCpu(apiPerRequest)}`);
    console.log(`receiving vs sending: ${((perSecond / Math.max(apiLoad.perSecond, 1)) * 100).toFixed(0)}% of the send path's rate, ${(total(perMessage) / Math.max(total(apiPerRequest), 0.001)).toFixed(1)}x its CPU per message`);
    console.log(`a ${(Buffer.byteLength(big) / 1024 / 1024).toFixed(1)} MiB message: accepted in ${bigSeconds.toFixed(1)} s; inbound anon memory ${idleMb ?? "?"} MB idle, peak ${peak} MB`);
    console.log(`target >= ${TARGET.perSecond} messages/s: ${perSecond >= TARGET.perSecond ? "met" : "NOT met"}; anon peak < ${TARGET.anonMb} MB: ${peak < TARGET.anonMb ? "met" : "NOT met"}`);
    return {
      messages: n, messageBytes, perSecond, cpuMsPerMessage: total(perMessage), api: apiLoad, apiCpuMsPerRequest: total(apiPerRequest),
      bigMessageBytes: Buffer.byteLength(big), inboundAnonPeakMb: peak,
    };
  } catch (err) {
    if (sys) for (const unit of ["inbound", "gateway"] as const) console.error(`${unit} log:\n${await sys.log(unit, 30)}`);
    throw err;
  } finally {
    await sys?.stop();
    await dns.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runInboundBench();
  process.exit(0);
}
