/**
 * The broadcast progress chart: an inline SVG of cumulative sent/delivered/opened/clicked
 * over time, drawn on the server (no chart library, no build step). The same function
 * serves the page and the JSON the page polls, so the chart looks the same either way.
 * The time axis starts when sending started, at zero (never a minute before it).
 */
import { VIEW_W, chartFrame, legendView, type Tick } from "./chart.js";
import { html, type Html } from "./html.js";

export interface ChartPoint {
  at: Date;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  /** SMART and OPTIMAL: recipients due in the minute (the planned curve). */
  planned?: number;
}

/** The planned curve's line (running total of recipients due), beside the sent one. */
const PLANNED = { label: "Planned", colour: "#52525b", dash: "1 4" };

export const SERIES = [
  // Colours differ in lightness as well as hue, and each line has its own dash pattern, so
  // the series stay apart without colour vision; the legend names them in text.
  { key: "sent", label: "Sent", colour: "#1d4ed8", dash: "" },
  { key: "delivered", label: "Delivered", colour: "#15803d", dash: "6 3" },
  { key: "opened", label: "Opened", colour: "#b45309", dash: "2 3" },
  { key: "clicked", label: "Clicked", colour: "#7e22ce", dash: "10 3 2 3" },
] as const;

const H = 1000;

/** "14:05 UTC", with seconds when the whole chart spans under five minutes. */
const clock = (d: Date, seconds: boolean) => `${d.toISOString().slice(11, seconds ? 19 : 16)} UTC`;

/** Per-minute increments -> running totals, one point per minute that had any. */
export function cumulative(points: ChartPoint[]): ChartPoint[] {
  const total = { sent: 0, delivered: 0, opened: 0, clicked: 0 };
  return points.map((p) => {
    total.sent += p.sent;
    total.delivered += p.delivered;
    total.opened += p.opened;
    total.clicked += p.clicked;
    return { at: p.at, ...total };
  });
}

/** When the chart's time axis begins and ends. */
export interface ChartWindow {
  /** When sending started (or was scheduled to): the axis starts here, at zero. */
  start?: Date;
  /** When sending completed; the axis reaches at least here (or now while sending goes on). */
  completedAt?: Date;
  now?: Date;
}

/**
 * Where each minute's running total is drawn: at the end of its minute (what was counted by
 * then), but never before the start, after completion (for the minutes sending ran in) or
 * after now. The first point is the start at zero, so the chart never begins before the
 * broadcast did.
 */
export function placePoints(increments: ChartPoint[], window: ChartWindow = {}): ChartPoint[] {
  const totals = cumulative(increments);
  const now = (window.now ?? new Date()).getTime();
  const start = Math.min(now, window.start?.getTime() ?? totals[0]?.at.getTime() ?? now);
  const done = window.completedAt?.getTime();
  const placed = totals.map((p) => {
    let t = Math.min(p.at.getTime() + 60_000, now);
    if (done !== undefined && p.at.getTime() <= done) t = Math.min(t, done);
    return { ...p, at: new Date(Math.max(t, start)) };
  });
  const last = placed[placed.length - 1];
  const end = Math.max(last?.at.getTime() ?? start, Math.min(done ?? now, now));
  const out = [{ at: new Date(start), sent: 0, delivered: 0, opened: 0, clicked: 0 }, ...placed];
  if (last && end > last.at.getTime()) out.push({ ...last, at: new Date(end) });
  return out;
}

/** The chart of per-minute increments (as GetBroadcastTimeline returns them). */
export function progressChart(all: ChartPoint[], title: string, window: ChartWindow = {}): Html {
  // Minutes that only hold planned recipients are not points of the actual lines.
  const increments = all.filter((p) => p.sent || p.delivered || p.opened || p.clicked);
  const planned = plannedTotals(all);
  if (increments.length === 0 && planned.length === 0) {
    return html`<p class="muted" data-chart-empty>Nothing sent yet: the chart starts with the first message out.</p>`;
  }
  const points = placePoints(increments, { ...window, start: window.start ?? planned[0]?.at });
  const t0 = points[0].at.getTime();
  // The planned curve runs to its last due minute, after now while recipients wait for their hour.
  const t1 = Math.max(t0 + 1000, points[points.length - 1].at.getTime(), (planned[planned.length - 1]?.at.getTime() ?? 0) + 60_000);
  const seconds = t1 - t0 < 5 * 60_000;
  const max = Math.max(1, ...points.flatMap((p) => [p.sent, p.delivered, p.opened, p.clicked]), planned[planned.length - 1]?.total ?? 0);
  const x = (t: number) => ((Math.max(t0, t) - t0) / (t1 - t0)) * VIEW_W;
  const y = (v: number) => H - (Math.max(0, v) / max) * H;
  const lines = SERIES.map((s) => {
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.at.getTime()).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join(" ");
    return html`<path d="${d}" fill="none" stroke="${s.colour}" stroke-width="2.5" vector-effect="non-scaling-stroke"${s.dash ? html` stroke-dasharray="${s.dash}"` : ""}/>`;
  });
  const axis = html`<line x1="0" y1="${H}" x2="${VIEW_W}" y2="${H}" stroke="#6b7280" vector-effect="non-scaling-stroke"/><line x1="0" y1="0" x2="0" y2="${H}" stroke="#6b7280" vector-effect="non-scaling-stroke"/>`;
  const first = points[0].at;
  const last = points[points.length - 1];
  const ticks: Tick[] = [
    { kind: "y", y: 0, text: String(max) },
    { kind: "y", y: 1, text: "0" },
    { kind: "x", x: 0, align: "start", text: clock(first, seconds), attrs: "data-axis-start" },
    { kind: "x", x: 1, align: "end", text: clock(new Date(t1), seconds), attrs: "data-axis-end" },
  ];
  const summary = SERIES.map((s) => `${s.label} ${last[s.key]}`).join(", ") + (planned.length ? `, ${PLANNED.label} ${planned[planned.length - 1].total} by ${clock(planned[planned.length - 1].at, seconds)}` : "");
  // The table is what screen readers (and anyone who wants numbers) get.
  const rows = points.slice(-30).map((p) => html`<tr><td>${clock(p.at, true)}</td>${SERIES.map((s) => html`<td class="num">${p[s.key]}</td>`)}</tr>`);
  const svg = html`<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" data-start="${first.toISOString()}" data-end="${new Date(t1).toISOString()}" aria-label="${`${title}: running totals from ${clock(first, seconds)} to ${clock(last.at, seconds)}: ${summary}`}">${axis}${lines}${planned.length ? plannedPath(planned, x, y) : ""}</svg>`;
  const legend = [...SERIES, ...(planned.length ? [PLANNED] : [])].map((s) => ({ label: s.label, colour: s.colour, dash: s.dash }));
  return html`${chartFrame({ svg, ticks, height: "13rem" })}${legendView(legend)}
<details><summary>Chart data (running totals, UTC)</summary><div class="table-wrap"><table class="data"><thead><tr><th>Time</th>${SERIES.map((s) => html`<th class="num">${s.label}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div></details>`;
}

/** Running totals of the planned recipients, one per minute that has any. */
function plannedTotals(points: ChartPoint[]): { at: Date; total: number }[] {
  let total = 0;
  return points.filter((p) => p.planned).map((p) => ({ at: p.at, total: (total += p.planned!) }));
}

/** The planned curve as steps: each minute's recipients are due from its start. */
function plannedPath(planned: { at: Date; total: number }[], x: (t: number) => number, y: (v: number) => number): Html {
  let d = `M${x(planned[0].at.getTime()).toFixed(1)},${y(0).toFixed(1)}`;
  let previous = 0;
  for (const p of planned) {
    const px = x(p.at.getTime()).toFixed(1);
    d += ` L${px},${y(previous).toFixed(1)} L${px},${y(p.total).toFixed(1)}`;
    previous = p.total;
  }
  d += ` L${VIEW_W},${y(previous).toFixed(1)}`;
  return html`<path d="${d}" fill="none" stroke="${PLANNED.colour}" stroke-width="2" vector-effect="non-scaling-stroke" stroke-dasharray="${PLANNED.dash}" data-series="planned"/>`;
}
