/**
 * The DMARC card of a domain page (DESIGN §10.4): the aggregate reports mailed to the rua
 * address the DNS records suggest, summed by the inbound unit (ReceivingService.GetDmarcSummary,
 * as GET /v1/domains/:id/dmarc): a server-rendered bar chart of messages per day split by
 * their DMARC result, the same numbers as a table, and the sources with failing ones
 * flagged. Every name and number from a report is escaped: reporters write what they like.
 * The views; the handler's part (the RPC) is pages/domains-dmarc.ts.
 */
import type { DmarcDaySummary, GetDmarcSummaryResponse } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { DMARC_DEFAULT_DAYS } from "@mailroom/http/constants.js";
import { VIEW_W, chartFrame, legendView, type Tick } from "./chart.js";
import { html, trusted, type Html } from "./html.js";
import { badge } from "./page-parts.js";

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
export function dmarcChart(days: DmarcDaySummary[]): Html {
  const H = 1000;
  const total = (d: DmarcDaySummary) => Number(d.messages);
  const passed = (d: DmarcDaySummary) => Math.round(total(d) * d.dmarcPassRate);
  const max = Math.max(1, ...days.map(total));
  const step = 10 ** Math.floor(Math.log10(max));
  const yMax = Math.ceil(max / step) * step;
  const slot = VIEW_W / Math.max(1, days.length);
  const y = (v: number) => H - (v / yMax) * H;
  const gridValues = [...new Set([0, 0.5, 1].map((f) => Math.round(yMax * f)))];
  const grid = gridValues.map((v) => html`<line x1="0" x2="${VIEW_W}" y1="${y(v)}" y2="${y(v)}" stroke="#d4d4d8" vector-effect="non-scaling-stroke"/>`);
  const bars = days.map((d, i) => {
    const x = (i * slot + slot * 0.15).toFixed(1);
    const w = Math.max(1, slot * 0.7).toFixed(1);
    const ok = passed(d);
    const bad = total(d) - ok;
    const day = d.day;
    return html`${ok ? html`<rect x="${x}" y="${y(ok).toFixed(1)}" width="${w}" height="${(H - y(ok)).toFixed(1)}" fill="${PASS.colour}"><title>${day}: ${ok} passed DMARC</title></rect>` : ""}${
      bad ? html`<rect x="${x}" y="${y(ok + bad).toFixed(1)}" width="${w}" height="${(y(ok) - y(ok + bad)).toFixed(1)}" fill="${FAIL.colour}"><title>${day}: ${bad} failed DMARC</title></rect>` : ""}`;
  });
  const labelEvery = Math.ceil(days.length / 8);
  const ticks: Tick[] = [
    ...gridValues.map((v): Tick => ({ kind: "y", y: y(v) / H, text: String(v) })),
    ...days.flatMap((d, i): Tick[] => i % labelEvery === 0 ? [{ kind: "x", x: (i + 0.5) / Math.max(1, days.length), text: d.day.slice(5), minor: (i / labelEvery) % 2 === 1 }] : []),
  ];
  const svg = html`<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="dmarc-chart-title" focusable="false"><title id="dmarc-chart-title">Messages reported per day, passing and failing DMARC. The table below has the numbers.</title>${grid}${bars}</svg>`;
  return html`${chartFrame({ svg, ticks, height: "10rem", className: "daily" })}${legendView([PASS, FAIL].map((s) => ({ label: s.label, colour: s.colour })))}`;
}

const dispositions = (d: { dispositionNone: bigint; dispositionQuarantine: bigint; dispositionReject: bigint }) =>
  `${d.dispositionNone} / ${d.dispositionQuarantine} / ${d.dispositionReject}`;

/** The card's summary part (chart, days, sources), from the inbound unit's answer. */
export function dmarcSummaryView(s: GetDmarcSummaryResponse): Html {
  if (!s.reports) {
    return html`<p class="muted" id="dmarc-empty">No aggregate report received in the last ${DMARC_DEFAULT_DAYS} days. Receivers send one a day once the DMARC record above names this server's address.</p>`;
  }
  const days = html`<details><summary>Per day</summary><div class="table-wrap"><table class="data stack" id="dmarc-days"><caption class="sr-only">Messages reported per day</caption>
<thead><tr><th scope="col">Day (UTC)</th><th scope="col">Messages</th><th scope="col">DMARC pass</th><th scope="col">SPF aligned pass</th><th scope="col">DKIM aligned pass</th><th scope="col">None / quarantine / reject</th></tr></thead><tbody>
${s.days.map((d) => html`<tr><td data-label="Day">${d.day}</td><td data-label="Messages">${d.messages}</td><td data-label="DMARC pass">${pct(d.dmarcPassRate)}</td><td data-label="SPF aligned pass">${pct(d.spfAlignedPassRate)}</td><td data-label="DKIM aligned pass">${pct(d.dkimAlignedPassRate)}</td><td data-label="None / quarantine / reject">${dispositions(d)}</td></tr>`)}
</tbody></table></div></details>`;
  const failing = s.sources.filter((x) => x.failingAlignment).length;
  const sources = html`<div class="table-wrap"><table class="data stack" id="dmarc-sources"><caption class="sr-only">Sending sources seen by receivers</caption>
<thead><tr><th scope="col">Source IP</th><th scope="col">Messages</th><th scope="col">DMARC pass</th><th scope="col">SPF aligned pass</th><th scope="col">DKIM aligned pass</th><th scope="col">None / quarantine / reject</th><th scope="col">Alignment</th></tr></thead><tbody>
${s.sources.slice(0, MAX_SOURCES).map((x) => html`<tr${x.failingAlignment ? html` class="failing"` : ""}><td data-label="Source IP"><code>${x.sourceIp}</code></td><td data-label="Messages">${x.messages}</td>
<td data-label="DMARC pass">${pct(x.dmarcPassRate)}</td><td data-label="SPF aligned pass">${pct(x.spfAlignedPassRate)}</td><td data-label="DKIM aligned pass">${pct(x.dkimAlignedPassRate)}</td><td data-label="None / quarantine / reject">${dispositions(x)}</td>
<td data-label="Alignment">${x.failingAlignment ? badge("Fails alignment", "bad") : badge("Aligned", "ok")}</td></tr>`)}
</tbody></table></div>${s.sources.length > MAX_SOURCES ? html`<p class="muted">The ${MAX_SOURCES} sources with the most messages of ${s.sources.length}; GET /v1/domains/{id}/dmarc lists them all.</p>` : ""}`;
  const flag = failing
    ? html`<p class="flash error" role="status" id="dmarc-failing">${failing} source${failing === 1 ? "" : "s"} sent mail that passed neither SPF nor DKIM aligned: if ${failing === 1 ? "it is" : "they are"} yours, sign ${failing === 1 ? "its" : "their"} mail or add ${failing === 1 ? "it" : "them"} to SPF; if not, someone sends as this domain.</p>`
    : "";
  return html`<p>${s.reports} report${s.reports === 1 ? "" : "s"} from ${s.reporters.join(", ")} in the last ${DMARC_DEFAULT_DAYS} days.</p>${flag}${dmarcChart(s.days)}${days}<h3>Sources</h3>${sources}`;
}

/** The rua the DNS records suggest and the operator's one-time record that lets receivers send there (RFC 7489 §7.1). */
function ruaView(rua: string): Html {
  const host = rua.replace(/^mailto:[^@]*@/, "");
  return html`<p class="muted">Reports come here through <code>rua=${rua}</code> in the DMARC record above. As that address is on another domain, receivers first look for
<code>${`*._report._dmarc.${host}`}</code> <code>TXT "v=DMARC1"</code>, which this server's operator publishes once for every domain.</p>`;
}

/** What the card has to show: the domain is not verified yet, the summary, or why there is none. */
export type DmarcCardState = { kind: "unverified" } | { kind: "summary"; summary: GetDmarcSummaryResponse } | { kind: "unavailable"; message: string };

/** The card (never fails the page: a summary that cannot be had says so inside it). */
export function dmarcCardView(state: DmarcCardState): Html {
  const inner = state.kind === "unverified"
    ? html`<p class="muted">The aggregate reports receivers send about this domain are shown here once the domain is verified.</p>`
    : state.kind === "summary" ? html`${dmarcSummaryView(state.summary)}${ruaView(state.summary.rua)}`
      : html`<p class="flash error" role="status">The DMARC summary is not available: ${state.message}</p>`;
  return html`<h2 id="dmarc">DMARC reports</h2><div class="card" id="dmarc-card">${inner}</div>`;
}
