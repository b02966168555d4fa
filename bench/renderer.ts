/**
 * Renderer benchmark: compile time of a ~100 KB newsletter (10 variables, 30 links) and
 * per-recipient merges per second on one core, beside a baseline of plain string
 * replacement (String.replaceAll of the same 10 variables over the same HTML and
 * subject) measured in the same run.
 *
 * The merge does more than the baseline: it also signs a recipient token, builds 29
 * tracked links, the unsubscribe URLs, the open pixel, the text part and the preview
 * text, and HTML-escapes values. Both return flat strings (merge() joins, replaceAll
 * builds flat results), so neither leaves copying to its consumer. Rows:
 *  - merge (strings): the string merge;
 *  - merge + encode: both also UTF-8-encode their HTML (Buffer.from) as for the wire;
 *    encoding 100 KB costs about as much as the whole merge on Node 20, so it is also
 *    printed on its own;
 *  - byte merge: mergeBytes(), HTML and text straight to wire bytes (CRLF, UTF-8, 7bit
 *    decision), what the delivery service uses; the target figure;
 *  - byte merge + MIME bodies: also the transfer encoding of both parts as buildMime()
 *    does it (this newsletter is one 100 KB line, so its HTML goes base64), beside the
 *    string merge followed by the same encoding from the strings.
 *
 * Run: `npx tsx bench/renderer.ts` or `npm run bench renderer`.
 */
import { pathToFileURL } from "node:url";
import os from "node:os";
import { ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compileMessage } from "@mailroom/content/compile/compile.js";
import { prepare, type MergeRecipient } from "@mailroom/content/merge.js";
import { ParsedTemplate } from "@mailroom/content/liquid/template.js";
import { bodyPart } from "../services/delivery/src/adapters/mime.js";
import { buildNewsletter, VARIABLES } from "../services/renderer/src/fixtures/newsletter.js";

const SECRET = "bench-secret-0123456789abcdef";
const PUBLIC_URL = "https://mail.example.com";
const TARGET_MERGES_PER_SECOND = 20_000;

function recipient(i: number): MergeRecipient {
  return {
    email: `user${i}@example.org`,
    contactId: `ct_${i}`,
    messageId: `<${i}.bench@mail.example.com>`,
    variables: {
      firstName: `Ann${i}`, lastName: "O'Neil & Sons", company: "Acme <Ltd>", plan: "pro", city: "Paris",
      country: "France", orderCount: i % 50, couponCode: `SAVE${i % 100}`,
    },
  };
}

/**
 * Calls per CPU-second of this process (user + system, GC threads included), not per
 * wall-second: "on one core" is what the target means, and CPU time does not count the
 * time other processes on a shared machine take from us. Each function runs in short
 * rounds interleaved with the others so that any drift hits all of them alike; the
 * median round is reported.
 */
function rates(fns: Record<string, (i: number) => void>, totalMs: number): Record<string, number> {
  const names = Object.keys(fns);
  for (const name of names) for (let i = 0; i < 1_000; i++) fns[name](i); // warm up the JIT
  const rounds = 9;
  const roundMs = totalMs / rounds / names.length;
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  let counter = 0;
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const fn = fns[name];
      const before = process.cpuUsage();
      const started = performance.now();
      let n = 0;
      while (performance.now() - started < roundMs) {
        for (let k = 0; k < 50; k++, n++) fn(counter++);
      }
      const used = process.cpuUsage(before);
      samples[name].push((n * 1e6) / (used.user + used.system));
    }
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return Object.fromEntries(names.map((n) => [n, median(samples[n])]));
}

export interface RendererBenchResult {
  htmlBytes: number;
  links: number;
  variables: number;
  compileMs: { first: number; median: number };
  mergesPerSecond: number;
  baselinePerSecond: number;
  mergesPerSecondEncoded: number;
  baselinePerSecondEncoded: number;
  encodeOnlyPerSecond: number;
  byteMergesPerSecond: number;
  byteMergesWithMimePerSecond: number;
  stringMergesWithMimePerSecond: number;
  /** The same newsletter with a loop and a condition, rendered by the Liquid engine (DESIGN §10.2). */
  liquidRendersPerSecond: number;
  /** Liquid render + compile of the rendered HTML + byte merge: a Liquid template's transactional send. */
  liquidSendsPerSecond: number;
  /** A Liquid broadcast's per-recipient merge: compiled once, one render and the byte merge per recipient. */
  liquidBroadcastMergesPerSecond: number;
}

/** DESIGN §10.2's Liquid case: the newsletter with a loop over order lines and a plan condition. */
const TARGET_LIQUID_RENDERS_PER_SECOND = 10_000;
const ITEMS = Array.from({ length: 5 }, (_, i) => ({ name: `Item ${i + 1}`, qty: i + 1, price: 9.5 * (i + 1) }));
function liquidNewsletter(input: { html: string; subject: string; previewText: string }) {
  const extra =
    '{% if plan == "pro" %}<p style="font-size:14px">Your Pro benefits: priority support.</p>{% else %}<p>Upgrade to Pro.</p>{% endif %}' +
    '<table role="presentation">{% for item in items %}<tr><td>{{ item.name | upcase }}</td><td>{{ item.qty }}</td><td>{{ item.price | money: "USD" }}</td></tr>{% endfor %}</table>' +
    '<p>Hi {{ firstName | default: "there" }}</p>';
  return { ...input, html: input.html.replace("</body>", `${extra}</body>`), text: "" };
}

export async function runRendererBench(opts: { durationMs?: number; log?: (line: string) => void } = {}): Promise<RendererBenchResult> {
  const log = opts.log ?? console.log;
  const durationMs = opts.durationMs ?? 2_000;
  const [load] = os.loadavg();
  const cpus = os.availableParallelism();
  log(`rates are per CPU-second of this process (one core), median of 9 interleaved rounds; load average ${load.toFixed(1)} on ${cpus} cores`);
  if (load > cpus) log("  (the machine is oversubscribed: other processes share caches and cores, so absolute figures are low; ratios hold)");
  const input = buildNewsletter();
  const compileInput = {
    ...input,
    text: "",
    trackClicks: true,
    trackOpens: true,
    kind: ContentKind.BROADCAST,
    contentId: "cmp_bench",
    workspaceId: "ws_bench",
  };
  const ctx = { secret: SECRET, publicUrl: PUBLIC_URL };

  let started = performance.now();
  let compiled = compileMessage(compileInput, ctx);
  const first = performance.now() - started;
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    started = performance.now();
    compiled = compileMessage(compileInput, ctx);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[3];

  const merger = prepare(compiled);
  let sink = 0;
  const ours = (i: number) => {
    const m = merger.merge(recipient(i), ctx);
    sink += m.html.length + m.text.length + m.subject.length;
  };
  const oursEncoded = (i: number) => {
    const m = merger.merge(recipient(i), ctx);
    sink += Buffer.from(m.html, "utf8").length + m.text.length + m.subject.length;
  };
  const replaceAll = (i: number) => {
    const r = recipient(i);
    const values: Record<string, string> = { ...r.variables, email: r.email, unsubscribeUrl: `${PUBLIC_URL}/u/x` } as never;
    let html = input.html.replaceAll("{{ lastName }}", "{{lastName}}");
    let subject = input.subject;
    for (const name of VARIABLES) {
      html = html.replaceAll(`{{${name}}}`, String(values[name]));
      subject = subject.replaceAll(`{{${name}}}`, String(values[name]));
    }
    return { html, subject };
  };
  const baseline = (i: number) => {
    const m = replaceAll(i);
    sink += m.html.length + m.subject.length;
  };
  const baselineEncoded = (i: number) => {
    const m = replaceAll(i);
    sink += Buffer.from(m.html, "utf8").length + m.subject.length;
  };
  const flatHtml = merger.merge(recipient(0), ctx).html.split("\n").join("\n");
  const encodeOnly = (_i: number) => {
    sink += Buffer.from(flatHtml, "utf8").length;
  };

  const bytes = (i: number) => {
    const m = merger.mergeBytes(recipient(i), ctx);
    sink += m.html.bytes.length + m.text.bytes.length + m.subject.length;
  };
  const bytesMime = (i: number) => {
    const m = merger.mergeBytes(recipient(i), ctx);
    sink += bodyPart(m.html).body.length + bodyPart(m.text).body.length + m.subject.length;
  };
  const stringsMime = (i: number) => {
    const m = merger.merge(recipient(i), ctx);
    sink += bodyPart(m.html).body.length + bodyPart(m.text).body.length + m.subject.length;
  };

  const liquidFields = liquidNewsletter(input);
  const liquid = ParsedTemplate.parse({ key: "bench", fields: liquidFields });
  const liquidValues = (i: number) => ({ ...recipient(i).variables, items: ITEMS });
  const liquidRender = (i: number) => {
    const out = liquid.render(liquidValues(i), { email: `user${i}@example.org` });
    sink += out.html.length + out.subject.length;
  };
  // A broadcast in Liquid: compiled once (links, footer, pixel, text with the tags in place), then per recipient one render and the byte merge.
  const liquidBroadcast = prepare(compileMessage({ ...compileInput, ...liquidFields }, ctx));
  const liquidBroadcastMerge = (i: number) => {
    const r = recipient(i);
    const m = liquidBroadcast.mergeBytes({ ...r, variables: { ...r.variables, items: ITEMS } }, ctx);
    sink += m.html.bytes.length + m.text.bytes.length;
  };
  const liquidSend = (i: number) => {
    const r = recipient(i);
    const out = liquid.render(liquidValues(i), { email: r.email });
    const one = compileMessage({ ...compileInput, ...out, kind: ContentKind.TRANSACTIONAL, systemVariablesOnly: true }, ctx);
    const m = prepare(one).mergeBytes(r, ctx);
    sink += m.html.bytes.length + m.text.bytes.length;
  };

  const r = rates(
    { ours, baseline, oursEncoded, baselineEncoded, encodeOnly, bytes, bytesMime, stringsMime, liquidRender, liquidBroadcastMerge, liquidSend },
    durationMs * 4,
  );
  const result: RendererBenchResult = {
    htmlBytes: Buffer.byteLength(input.html),
    links: compiled.links.length,
    variables: compiled.variables.length,
    compileMs: { first, median },
    mergesPerSecond: r.ours,
    baselinePerSecond: r.baseline,
    mergesPerSecondEncoded: r.oursEncoded,
    baselinePerSecondEncoded: r.baselineEncoded,
    encodeOnlyPerSecond: r.encodeOnly,
    byteMergesPerSecond: r.bytes,
    byteMergesWithMimePerSecond: r.bytesMime,
    stringMergesWithMimePerSecond: r.stringsMime,
    liquidRendersPerSecond: r.liquidRender,
    liquidSendsPerSecond: r.liquidSend,
    liquidBroadcastMergesPerSecond: r.liquidBroadcastMerge,
  };
  if (sink === -1) log("unreachable"); // keeps the work observable

  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  const textKb = (Buffer.byteLength(merger.merge(recipient(0), ctx).text) / 1024).toFixed(1);
  log(`newsletter: ${(result.htmlBytes / 1024).toFixed(1)} KB HTML (${textKb} KB generated text), ${result.variables} variables, ${result.links} tracked links + unsubscribe link`);
  log(`compile: first ${first.toFixed(1)} ms, median of 7 ${median.toFixed(1)} ms (parse, rewrite, footer, pixel, plain text)`);
  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
  const us = (perSecond: number) => `${(1e6 / perSecond).toFixed(1)} µs`;
  const row = (label: string, ours: number, base: number) =>
    log(`${label.padEnd(16)} ${fmt(ours).padStart(7)} merges/s (${us(ours)}) | baseline replaceAll ${fmt(base).padStart(6)}/s (${us(base)}) | ratio ${ratio(ours, base)}`);
  row("merge (strings)", result.mergesPerSecond, result.baselinePerSecond);
  row("merge + encode", result.mergesPerSecondEncoded, result.baselinePerSecondEncoded);
  log(`  (UTF-8 encoding of the flat 100 KB HTML alone: ${us(result.encodeOnlyPerSecond)}, i.e. at most ${fmt(result.encodeOnlyPerSecond)}/s for anything that must produce bytes)`);
  row("byte merge", result.byteMergesPerSecond, result.baselinePerSecondEncoded);
  log(`  (HTML and text as wire bytes, CRLF, with the 7bit decision; baseline here = replaceAll + UTF-8 encoding of its HTML)`);
  const mime = (label: string, perSecond: number) => log(`${label.padEnd(34)} ${fmt(perSecond).padStart(7)} merges/s (${us(perSecond)})`);
  mime("byte merge + MIME bodies", result.byteMergesWithMimePerSecond);
  mime("string merge + MIME bodies", result.stringMergesWithMimePerSecond);
  log(`  (both parts transfer-encoded as buildMime() does; this newsletter's HTML is one line over 998 octets, so base64)`);
  log(`liquid render                    ${fmt(result.liquidRendersPerSecond).padStart(7)} renders/s (${us(result.liquidRendersPerSecond)}) — ${(Buffer.byteLength(liquidFields.html) / 1024).toFixed(1)} KB, a loop over ${ITEMS.length} lines and a plan condition, parsed once`);
  log(`liquid broadcast byte merge     ${fmt(result.liquidBroadcastMergesPerSecond).padStart(7)} merges/s (${us(result.liquidBroadcastMergesPerSecond)}) — compiled once with the Liquid in place, one render + byte merge per recipient`);
  log(`liquid render + compile + merge   ${fmt(result.liquidSendsPerSecond).padStart(7)} sends/s (${us(result.liquidSendsPerSecond)}) — a Liquid template's transactional email (links tracked on the rendered HTML)`);
  log(`target >= ${fmt(TARGET_LIQUID_RENDERS_PER_SECOND)} Liquid renders/s on one core: ${result.liquidRendersPerSecond >= TARGET_LIQUID_RENDERS_PER_SECOND ? "met" : "NOT met"}`);
  log(`target >= ${fmt(TARGET_MERGES_PER_SECOND)} merges/s on one core: string merge ${result.mergesPerSecond >= TARGET_MERGES_PER_SECOND ? "met" : "NOT met"}, byte merge ${result.byteMergesPerSecond >= TARGET_MERGES_PER_SECOND ? "met" : "NOT met"}`);
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runRendererBench();
}
