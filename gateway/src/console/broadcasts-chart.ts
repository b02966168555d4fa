/**
 * The broadcast progress chart: an inline SVG of cumulative sent/delivered/opened/clicked
 * over time, drawn on the server (no chart library, no build step). The same function
 * serves the page and the JSON the page polls, so the chart looks the same either way.
 */
import { escapeHtml } from "../routes/page.js";

export interface ChartPoint {
  at: Date;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
}

export const SERIES = [
  // Colours differ in lightness as well as hue, and each line has its own dash pattern, so
  // the series stay apart without colour vision; the legend names them in text.
  { key: "sent", label: "Sent", colour: "#1d4ed8", dash: "" },
  { key: "delivered", label: "Delivered", colour: "#15803d", dash: "6 3" },
  { key: "opened", label: "Opened", colour: "#b45309", dash: "2 3" },
  { key: "clicked", label: "Clicked", colour: "#7e22ce", dash: "10 3 2 3" },
] as const;

const W = 640;
const H = 240;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

const hhmm = (d: Date) => d.toISOString().slice(11, 16);

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

/** The chart of per-minute increments (as GetBroadcastTimeline returns them). */
export function progressChart(increments: ChartPoint[], title: string): string {
  const points = cumulative(increments);
  if (points.length === 0) {
    return `<p class="muted" data-chart-empty>Nothing sent yet: the chart starts with the first message out.</p>`;
  }
  // A single minute still draws lines: start them at zero one minute earlier.
  if (points.length === 1) points.unshift({ at: new Date(points[0].at.getTime() - 60_000), sent: 0, delivered: 0, opened: 0, clicked: 0 });
  const t0 = points[0].at.getTime();
  const t1 = points[points.length - 1].at.getTime();
  const max = Math.max(1, ...points.flatMap((p) => [p.sent, p.delivered, p.opened, p.clicked]));
  const x = (t: number) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (Math.max(0, v) / max) * (H - PAD.top - PAD.bottom);
  const lines = SERIES.map((s) => {
    const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.at.getTime()).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join(" ");
    return `<path d="${d}" fill="none" stroke="${s.colour}" stroke-width="2.5"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/>`;
  }).join("");
  const axis = `<line x1="${PAD.left}" y1="${H - PAD.bottom}" x2="${W - PAD.right}" y2="${H - PAD.bottom}" stroke="#6b7280"/>` +
    `<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${H - PAD.bottom}" stroke="#6b7280"/>` +
    `<text x="${PAD.left - 6}" y="${PAD.top + 10}" text-anchor="end" font-size="12" fill="#1a1a1a">${max}</text>` +
    `<text x="${PAD.left - 6}" y="${H - PAD.bottom}" text-anchor="end" font-size="12" fill="#1a1a1a">0</text>` +
    `<text x="${PAD.left}" y="${H - 8}" font-size="12" fill="#1a1a1a">${hhmm(points[0].at)} UTC</text>` +
    `<text x="${W - PAD.right}" y="${H - 8}" text-anchor="end" font-size="12" fill="#1a1a1a">${hhmm(points[points.length - 1].at)} UTC</text>`;
  const last = points[points.length - 1];
  const summary = SERIES.map((s) => `${s.label} ${last[s.key]}`).join(", ");
  const legend = `<ul class="row" style="list-style:none;padding:0;margin:.5rem 0 0">${SERIES.map((s) =>
    `<li><svg width="28" height="10" aria-hidden="true"><line x1="0" y1="5" x2="28" y2="5" stroke="${s.colour}" stroke-width="3"${s.dash ? ` stroke-dasharray="${s.dash}"` : ""}/></svg> ${s.label}</li>`).join("")}</ul>`;
  // The table is what screen readers (and anyone who wants numbers) get.
  const rows = points.slice(-30).map((p) => `<tr><td>${hhmm(p.at)}</td>${SERIES.map((s) => `<td class="num">${p[s.key]}</td>`).join("")}</tr>`).join("");
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeHtml(`${title}: running totals up to ${hhmm(last.at)} UTC: ${summary}`)}">${axis}${lines}</svg>${legend}
<details><summary>Chart data (running totals per minute, UTC)</summary><div class="table-wrap"><table class="data"><thead><tr><th>Minute</th>${SERIES.map((s) => `<th class="num">${s.label}</th>`).join("")}</tr></thead><tbody>${rows}</tbody></table></div></details>`;
}
