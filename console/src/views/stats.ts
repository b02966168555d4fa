/**
 * Overview (the console's home), the views: the range form, the totals, the per-day chart and
 * the per-group chart, each chart followed by its numbers as a table (chart.ts draws the frame).
 * The handler is pages/stats.ts.
 */
import { CONSOLE_PREFIX } from "../layout.js";
import { VIEW_W, chartFrame, legendView, type Tick } from "./chart.js";
import { html, type Html } from "./html.js";

// Series colours with at least 3:1 contrast on white (WCAG non-text contrast).
export const SERIES = [
  { key: "sent", label: "Sent", color: "#1d4ed8" },
  { key: "delivered", label: "Delivered", color: "#15803d" },
  { key: "opened", label: "Opened", color: "#7c3aed" },
  { key: "clicked", label: "Clicked", color: "#b45309" },
  { key: "bounced", label: "Bounced", color: "#b91c1c" },
] as const;
export type SeriesKey = (typeof SERIES)[number]["key"];
type Series = Record<SeriesKey, number>;

const pct = (part: number, whole: number) => (whole ? `${((100 * part) / whole).toFixed(1)}%` : "—");

/** Grouped bars per day; the y axis rounds up to a readable maximum. Text is HTML (chart.ts). */
function dailyChart(days: Array<{ date: string; c: Series }>): Html {
  const H = 1000;
  const max = Math.max(1, ...days.flatMap((d) => SERIES.map((s) => d.c[s.key])));
  const step = 10 ** Math.floor(Math.log10(max));
  const yMax = Math.ceil(max / step) * step;
  const slot = VIEW_W / Math.max(1, days.length);
  const barW = Math.max(1, (slot * 0.8) / SERIES.length);
  const y = (v: number) => H - (v / yMax) * H;
  const gridValues = [...new Set([0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(yMax * f)))];
  const grid = gridValues.map((v) => html`<line x1="0" x2="${VIEW_W}" y1="${y(v)}" y2="${y(v)}" stroke="#d4d4d8" vector-effect="non-scaling-stroke"/>`);
  const bars = days.map((d, i) => {
    const x0 = i * slot + slot * 0.1;
    return SERIES.map((s, j) => {
      const v = d.c[s.key];
      return v ? html`<rect x="${(x0 + j * barW).toFixed(1)}" y="${y(v).toFixed(1)}" width="${barW.toFixed(1)}" height="${(H - y(v)).toFixed(1)}" fill="${s.color}"><title>${d.date}: ${v} ${s.label.toLowerCase()}</title></rect>` : "";
    });
  });
  // At most 8 day labels; at phone width every other one of them (the minor ones) is left out.
  const labelEvery = Math.ceil(days.length / 8);
  const ticks: Tick[] = [
    ...gridValues.map((v): Tick => ({ kind: "y", y: y(v) / H, text: String(v) })),
    ...days.flatMap((d, i): Tick[] => i % labelEvery === 0
      ? [{ kind: "x", x: (i + 0.5) / Math.max(1, days.length), text: d.date.slice(5), minor: (i / labelEvery) % 2 === 1 }] : []),
  ];
  const svg = html`<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="daily-title" focusable="false"><title id="daily-title">Emails per day: ${SERIES.map((s) => s.label.toLowerCase()).join(", ")}. The table below has the numbers.</title>${grid}${bars}</svg>`;
  return html`${chartFrame({ svg, ticks, height: "14rem", className: "daily" })}${legendView(SERIES.map((s) => ({ label: s.label, colour: s.color })))}`;
}

/** Horizontal bars per group: sent, with the opened share inside; names and values are HTML. */
function groupChart(groups: Array<{ name: string; c: Series }>): Html {
  const rowH = 34, H = groups.length * rowH;
  const max = Math.max(1, ...groups.map((g) => g.c.sent));
  // Bars reach 85 % at most: the value label goes after the bar.
  const w = (v: number) => (0.85 * VIEW_W * v) / max;
  const rows = groups.map((g, i) => {
    const y = i * rowH;
    return html`<rect x="0" y="${y + 6}" width="${w(g.c.sent).toFixed(1)}" height="22" fill="#1d4ed8"><title>${g.name}: ${g.c.sent} sent</title></rect>
<rect x="0" y="${y + 12}" width="${w(g.c.opened).toFixed(1)}" height="10" fill="#c4b5fd"><title>${g.name}: ${g.c.opened} opened</title></rect>`;
  });
  const ticks = groups.flatMap((g, i): Tick[] => [
    { kind: "y", y: (i + 0.5) / groups.length, text: g.name },
    { kind: "v", x: w(g.c.sent) / VIEW_W, y: (i + 0.5) / groups.length, text: String(g.c.sent) },
  ]);
  const svg = html`<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="group-title" focusable="false"><title id="group-title">Emails sent per group, with the opened share as the inner bar. The table below has the numbers.</title>${rows}</svg>`;
  return chartFrame({ svg, ticks, height: `${(H / 16).toFixed(3)}rem`, className: "groups" });
}

export interface Overview {
  /** The range the service counted (UTC days) and the group asked for. */
  from: string;
  to: string;
  groupBy: string;
  /** Totals (transactional and broadcast) and the transactional part. */
  totals: Series & { complained: number };
  transactionalSent: number;
  days: Array<{ date: string; c: Series; broadcastSent: number }>;
  groups: Array<{ name: string; c: Series }>;
  /** The broadcasts counted in the range, or why there are none: "none" (no access, or a group asked for), "unavailable". */
  broadcasts: { count: number; sent: number; truncatedAt?: number } | "none" | "unavailable";
}

export function overviewView(o: Overview): Html {
  const bc = typeof o.broadcasts === "object" ? o.broadcasts : undefined;
  const t = o.totals;
  const split = bc ? html`<div class="muted" data-split>${o.transactionalSent} transactional · ${bc.sent} broadcast</div>` : "";
  const tiles = ([
    ["Sent", t.sent, "", split], ["Delivered", t.delivered, pct(t.delivered, t.sent)], ["Opened", t.opened, pct(t.opened, t.delivered)],
    ["Clicked", t.clicked, pct(t.clicked, t.delivered)], ["Bounced", t.bounced, pct(t.bounced, t.sent)], ["Complaints", t.complained, pct(t.complained, t.delivered)],
  ] as Array<[string, number, string, Html?]>).map(([label, v, rate, extra]) => html`<div class="card"><div class="muted">${label}</div><div style="font-size:1.8rem;font-weight:700" data-total="${label.toLowerCase()}">${v}</div>${rate ? html`<div class="muted">${rate}</div>` : ""}${extra ?? ""}</div>`);
  const dayTable = html`<details><summary>Numbers per day</summary><div class="table-wrap"><table class="data"><caption class="sr-only">Emails per day</caption>
<thead><tr><th scope="col">Day (UTC)</th>${SERIES.map((s) => html`<th scope="col" class="num">${s.label}</th>`)}${bc ? html`<th scope="col" class="num">Of which broadcast, sent</th>` : ""}</tr></thead>
<tbody>${o.days.map((d) => html`<tr><th scope="row">${d.date}</th>${SERIES.map((s) => html`<td class="num">${d.c[s.key]}</td>`)}${bc ? html`<td class="num">${d.broadcastSent}</td>` : ""}</tr>`)}</tbody></table></div></details>`;
  const groupRows = o.groups.map((g) => html`<tr><th scope="row">${g.name === "(no group)" ? g.name : html`<a href="${CONSOLE_PREFIX}?${new URLSearchParams({ groupBy: g.name, from: o.from, to: o.to }).toString()}">${g.name}</a>`}</th><td class="num">${g.c.sent}</td><td class="num">${g.c.delivered}</td><td class="num">${pct(g.c.opened, g.c.delivered)}</td><td class="num">${pct(g.c.clicked, g.c.delivered)}</td><td class="num">${g.c.bounced}</td></tr>`);
  const groupSection = o.groups.length
    ? html`${groupChart(o.groups)}<div class="table-wrap"><table class="data" id="groups"><caption class="sr-only">Emails per group</caption>
<thead><tr><th scope="col">Group</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Delivered</th><th scope="col" class="num">Open rate</th><th scope="col" class="num">Click rate</th><th scope="col" class="num">Bounced</th></tr></thead>
<tbody>${groupRows}</tbody></table></div>`
    : html`<p class="muted">No transactional emails with a group in this range.</p>`;
  return html`<h1>Overview</h1>
<form method="get" action="${CONSOLE_PREFIX}" class="card" aria-label="Stats range"><div class="row">
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${o.from}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${o.to}"></div>
<div class="field"><label for="groupBy">Group (groupBy)</label><input id="groupBy" name="groupBy" value="${o.groupBy}"></div>
<div class="field"><button type="submit">Show</button></div></div></form>
<p class="muted">${bc ? "Transactional and broadcast emails" : "Transactional emails"} from ${o.from} to ${o.to} (UTC days)${o.groupBy ? html`, group <strong>${o.groupBy}</strong> (groups are transactional only)` : ""}. Each transactional email counts on the day it was sent${bc ? `; a broadcast's messages count on the day it started sending (${bc.count} broadcast${bc.count === 1 ? "" : "s"} in this range${bc.truncatedAt ? `, among the newest ${bc.truncatedAt} broadcasts` : ""})` : ""}.</p>
${o.broadcasts === "unavailable" ? html`<p class="flash error" role="status">Broadcast numbers are unavailable right now (the broadcast service did not answer): these are transactional emails only.</p>` : ""}
<div class="grid" id="totals">${tiles}</div>
<h2>Per day</h2><div class="card">${dailyChart(o.days)}</div>${dayTable}
<h2>Per group</h2><p class="muted">Transactional emails by their <code>groupBy</code>.</p>${groupSection}`;
}
