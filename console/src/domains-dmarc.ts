/**
 * The DMARC card of a domain page (DESIGN §10.4): the aggregate reports mailed to the rua
 * address the DNS records suggest, summed by the inbound unit (ReceivingService.GetDmarcSummary,
 * as GET /v1/domains/:id/dmarc): a server-rendered bar chart of messages per day split by
 * their DMARC result, the same numbers as a table, and the sources with failing ones
 * flagged. Every name and number from a report is escaped: reporters write what they like.
 */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyRequest } from "fastify";
import type { Domain } from "@mailroom/proto/directory/v1/directory_pb.js";
import type { DmarcDaySummary, GetDmarcSummaryResponse } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { DMARC_DEFAULT_DAYS } from "@mailroom/http/constants.js";
import { VIEW_W, chartFrame, legendView, type Tick } from "./views/chart.js";
import { render, trusted } from "./views/html.js";
import type { ConsoleDeps } from "./deps.js";
import { escapeHtml, statusBadge } from "./layout.js";

/** Sources listed at most; the API has them all. */
const MAX_SOURCES = 50;

// At least 3:1 against white; told apart by lightness too, and named by the legend.
const PASS = { label: "Passed DMARC", colour: "#15803d" };
const FAIL = { label: "Failed DMARC", colour: "#b91c1c" };

const pct = (rate: number) => `${(rate * 100).toFixed(1)}%`;

/**
 * Stacked bars per day: messages that passed DMARC (SPF or DKIM passed aligned with the From
 * domain), and those that did not — the ones a p=quarantine or reject policy acts on.
 */
export function dmarcChart(days: DmarcDaySummary[]): string {
  const H = 1000;
  const total = (d: DmarcDaySummary) => Number(d.messages);
  const passed = (d: DmarcDaySummary) => Math.round(total(d) * d.dmarcPassRate);
  const max = Math.max(1, ...days.map(total));
  const step = 10 ** Math.floor(Math.log10(max));
  const yMax = Math.ceil(max / step) * step;
  const slot = VIEW_W / Math.max(1, days.length);
  const y = (v: number) => H - (v / yMax) * H;
  const gridValues = [...new Set([0, 0.5, 1].map((f) => Math.round(yMax * f)))];
  const grid = gridValues.map((v) => `<line x1="0" x2="${VIEW_W}" y1="${y(v)}" y2="${y(v)}" stroke="#d4d4d8" vector-effect="non-scaling-stroke"/>`).join("");
  const bars = days.map((d, i) => {
    const x = (i * slot + slot * 0.15).toFixed(1);
    const w = Math.max(1, slot * 0.7).toFixed(1);
    const ok = passed(d);
    const bad = total(d) - ok;
    const day = escapeHtml(d.day);
    return (ok ? `<rect x="${x}" y="${y(ok).toFixed(1)}" width="${w}" height="${(H - y(ok)).toFixed(1)}" fill="${PASS.colour}"><title>${day}: ${ok} passed DMARC</title></rect>` : "")
      + (bad ? `<rect x="${x}" y="${y(ok + bad).toFixed(1)}" width="${w}" height="${(y(ok) - y(ok + bad)).toFixed(1)}" fill="${FAIL.colour}"><title>${day}: ${bad} failed DMARC</title></rect>` : "");
  }).join("");
  const labelEvery = Math.ceil(days.length / 8);
  const ticks: Tick[] = [
    ...gridValues.map((v): Tick => ({ kind: "y", y: y(v) / H, text: String(v) })),
    ...days.flatMap((d, i): Tick[] => i % labelEvery === 0 ? [{ kind: "x", x: (i + 0.5) / Math.max(1, days.length), text: d.day.slice(5), minor: (i / labelEvery) % 2 === 1 }] : []),
  ];
  const svg = `<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="dmarc-chart-title" focusable="false"><title id="dmarc-chart-title">Messages reported per day, passing and failing DMARC. The table below has the numbers.</title>${grid}${bars}</svg>`;
  return render(chartFrame({ svg: trusted(svg), ticks, height: "10rem", className: "daily" })) + render(legendView([PASS, FAIL].map((s) => ({ label: s.label, colour: s.colour }))));
}

const dispositions = (d: { dispositionNone: bigint; dispositionQuarantine: bigint; dispositionReject: bigint }) =>
  `${d.dispositionNone} / ${d.dispositionQuarantine} / ${d.dispositionReject}`;

/** The card's summary part (chart, days, sources), from the inbound unit's answer. */
export function dmarcSummaryHtml(s: GetDmarcSummaryResponse): string {
  if (!s.reports) {
    return `<p class="muted" id="dmarc-empty">No aggregate report received in the last ${DMARC_DEFAULT_DAYS} days. Receivers send one a day once the DMARC record above names this server's address.</p>`;
  }
  const days = `<details><summary>Per day</summary><div class="table-wrap"><table class="data stack" id="dmarc-days"><caption class="sr-only">Messages reported per day</caption>
<thead><tr><th scope="col">Day (UTC)</th><th scope="col">Messages</th><th scope="col">DMARC pass</th><th scope="col">SPF aligned pass</th><th scope="col">DKIM aligned pass</th><th scope="col">None / quarantine / reject</th></tr></thead><tbody>
${s.days.map((d) => `<tr><td data-label="Day">${escapeHtml(d.day)}</td><td data-label="Messages">${d.messages}</td><td data-label="DMARC pass">${pct(d.dmarcPassRate)}</td><td data-label="SPF aligned pass">${pct(d.spfAlignedPassRate)}</td><td data-label="DKIM aligned pass">${pct(d.dkimAlignedPassRate)}</td><td data-label="None / quarantine / reject">${dispositions(d)}</td></tr>`).join("")}
</tbody></table></div></details>`;
  const failing = s.sources.filter((x) => x.failingAlignment).length;
  const sources = `<div class="table-wrap"><table class="data stack" id="dmarc-sources"><caption class="sr-only">Sending sources seen by receivers</caption>
<thead><tr><th scope="col">Source IP</th><th scope="col">Messages</th><th scope="col">DMARC pass</th><th scope="col">SPF aligned pass</th><th scope="col">DKIM aligned pass</th><th scope="col">None / quarantine / reject</th><th scope="col">Alignment</th></tr></thead><tbody>
${s.sources.slice(0, MAX_SOURCES).map((x) => `<tr${x.failingAlignment ? ' class="failing"' : ""}><td data-label="Source IP"><code>${escapeHtml(x.sourceIp)}</code></td><td data-label="Messages">${x.messages}</td>
<td data-label="DMARC pass">${pct(x.dmarcPassRate)}</td><td data-label="SPF aligned pass">${pct(x.spfAlignedPassRate)}</td><td data-label="DKIM aligned pass">${pct(x.dkimAlignedPassRate)}</td><td data-label="None / quarantine / reject">${dispositions(x)}</td>
<td data-label="Alignment">${x.failingAlignment ? statusBadge("Fails alignment", "bad") : statusBadge("Aligned", "ok")}</td></tr>`).join("")}
</tbody></table></div>${s.sources.length > MAX_SOURCES ? `<p class="muted">The ${MAX_SOURCES} sources with the most messages of ${s.sources.length}; GET /v1/domains/{id}/dmarc lists them all.</p>` : ""}`;
  const reporters = s.reporters.map(escapeHtml).join(", ");
  const flag = failing
    ? `<p class="flash error" role="status" id="dmarc-failing">${failing} source${failing === 1 ? "" : "s"} sent mail that passed neither SPF nor DKIM aligned: if ${failing === 1 ? "it is" : "they are"} yours, sign ${failing === 1 ? "its" : "their"} mail or add ${failing === 1 ? "it" : "them"} to SPF; if not, someone sends as this domain.</p>`
    : "";
  return `<p>${s.reports} report${s.reports === 1 ? "" : "s"} from ${reporters} in the last ${DMARC_DEFAULT_DAYS} days.</p>${flag}${dmarcChart(s.days)}${days}<h3>Sources</h3>${sources}`;
}

/** The rua the DNS records suggest and the operator's one-time record that lets receivers send there (RFC 7489 §7.1). */
function ruaHtml(rua: string): string {
  const host = rua.replace(/^mailto:[^@]*@/, "");
  return `<p class="muted">Reports come here through <code>rua=${escapeHtml(rua)}</code> in the DMARC record above. As that address is on another domain, receivers first look for
<code>${escapeHtml(`*._report._dmarc.${host}`)}</code> <code>TXT "v=DMARC1"</code>, which this server's operator publishes once for every domain.</p>`;
}

/** The card: never fails the page (a summary that cannot be had says so inside it). */
export async function dmarcCard(deps: ConsoleDeps, request: FastifyRequest, workspaceId: string, domain: Domain): Promise<string> {
  const head = `<h2 id="dmarc">DMARC reports</h2>`;
  if (!domain.verified) {
    return `${head}<div class="card" id="dmarc-card"><p class="muted">The aggregate reports receivers send about this domain are shown here once the domain is verified.</p></div>`;
  }
  try {
    const since = new Date(Date.now() - DMARC_DEFAULT_DAYS * 86_400_000);
    const summary = await deps.clients.receiving.getDmarcSummary({ workspaceId, domain: domain.domain, since: timestampFromDate(since) }, { ...rpcOptions(request), timeoutMs: 15_000 });
    return `${head}<div class="card" id="dmarc-card">${dmarcSummaryHtml(summary)}${ruaHtml(summary.rua)}</div>`;
  } catch (err) {
    return `${head}<div class="card" id="dmarc-card"><p class="flash error" role="status">The DMARC summary is not available: ${escapeHtml(bodyFromError(err).message)}</p></div>`;
  }
}
