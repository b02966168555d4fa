/**
 * Overview (the console's home): outcome counters of transactional emails per UTC day and
 * per groupBy (EmailService.GetStats, as GET /v1/stats/emails), drawn as server-rendered
 * SVG charts, each followed by the same numbers as a table for screen readers and for
 * anyone who prefers them.
 */
import type { FastifyInstance } from "fastify";
import type { StatsCounters } from "../../../gen/mailroom/email/v1/email_pb.js";
import { rpcOptions } from "../deps.js";
import { refusal } from "../errors.js";
import type { ConsoleDeps } from "./deps.js";
import { CONSOLE_PREFIX, consolePage, escapeHtml } from "./layout.js";
import { sessionOf } from "./session.js";

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const n = (v: bigint | undefined) => Number(v ?? 0n);
const pct = (part: number, whole: number) => (whole ? `${((100 * part) / whole).toFixed(1)}%` : "—");

// Series colours with at least 3:1 contrast on white (WCAG non-text contrast).
const SERIES = [
  { key: "sent", label: "Sent", color: "#1d4ed8" },
  { key: "delivered", label: "Delivered", color: "#15803d" },
  { key: "opened", label: "Opened", color: "#7c3aed" },
  { key: "clicked", label: "Clicked", color: "#b45309" },
  { key: "bounced", label: "Bounced", color: "#b91c1c" },
] as const;
type SeriesKey = (typeof SERIES)[number]["key"];

/** Grouped bars per day; the y axis rounds up to a readable maximum. */
function dailyChart(days: Array<{ date: string; c: Record<SeriesKey, number> }>): string {
  const W = 720, H = 280, left = 40, bottom = 56, top = 12, right = 8;
  const max = Math.max(1, ...days.flatMap((d) => SERIES.map((s) => d.c[s.key])));
  const step = 10 ** Math.floor(Math.log10(max));
  const yMax = Math.ceil(max / step) * step;
  const plotW = W - left - right, plotH = H - top - bottom;
  const slot = plotW / Math.max(1, days.length);
  const barW = Math.max(1, (slot * 0.8) / SERIES.length);
  const y = (v: number) => top + plotH - (v / yMax) * plotH;
  const grid = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const v = Math.round(yMax * f);
    return `<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#d4d4d8"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11" fill="#4a4a4a">${v}</text>`;
  }).join("");
  const labelEvery = Math.ceil(days.length / 8);
  const bars = days.map((d, i) => {
    const x0 = left + i * slot + slot * 0.1;
    const rects = SERIES.map((s, j) => {
      const v = d.c[s.key];
      return v ? `<rect x="${(x0 + j * barW).toFixed(1)}" y="${y(v).toFixed(1)}" width="${barW.toFixed(1)}" height="${(top + plotH - y(v)).toFixed(1)}" fill="${s.color}"><title>${d.date}: ${v} ${s.label.toLowerCase()}</title></rect>` : "";
    }).join("");
    const label = i % labelEvery === 0 ? `<text x="${(left + i * slot + slot / 2).toFixed(1)}" y="${H - bottom + 16}" text-anchor="middle" font-size="11" fill="#4a4a4a">${d.date.slice(5)}</text>` : "";
    return rects + label;
  }).join("");
  const legend = SERIES.map((s, j) => `<g transform="translate(${left + j * 120},${H - 12})"><rect width="12" height="12" y="-10" fill="${s.color}"/><text x="16" font-size="12" fill="#1a1a1a">${s.label}</text></g>`).join("");
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="daily-title" focusable="false"><title id="daily-title">Emails per day: ${SERIES.map((s) => s.label.toLowerCase()).join(", ")}. The table below has the numbers.</title>${grid}${bars}${legend}</svg>`;
}

/** Horizontal bars per group: sent, with the delivered and opened share inside. */
function groupChart(groups: Array<{ name: string; c: Record<SeriesKey, number> }>): string {
  const rowH = 34, labelW = 160, W = 720, H = groups.length * rowH + 10;
  const max = Math.max(1, ...groups.map((g) => g.c.sent));
  const w = (v: number) => ((W - labelW - 60) * v) / max;
  const rows = groups.map((g, i) => {
    const y = 5 + i * rowH;
    return `<text x="${labelW - 8}" y="${y + 19}" text-anchor="end" font-size="13" fill="#1a1a1a">${escapeHtml(g.name.length > 22 ? `${g.name.slice(0, 21)}…` : g.name)}</text>
<rect x="${labelW}" y="${y + 4}" width="${w(g.c.sent).toFixed(1)}" height="22" fill="#1d4ed8"><title>${escapeHtml(g.name)}: ${g.c.sent} sent</title></rect>
<rect x="${labelW}" y="${y + 10}" width="${w(g.c.opened).toFixed(1)}" height="10" fill="#c4b5fd"><title>${escapeHtml(g.name)}: ${g.c.opened} opened</title></rect>
<text x="${labelW + w(g.c.sent) + 6}" y="${y + 19}" font-size="12" fill="#1a1a1a">${g.c.sent}</text>`;
  }).join("");
  return `<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="group-title" focusable="false"><title id="group-title">Emails sent per group, with the opened share as the inner bar. The table below has the numbers.</title>${rows}</svg>`;
}

const counters = (c: StatsCounters | undefined): Record<SeriesKey, number> & { hardBounced: number; failed: number; complained: number; unsubscribed: number } => ({
  sent: n(c?.sent), delivered: n(c?.delivered), opened: n(c?.opened), clicked: n(c?.clicked), bounced: n(c?.bounced),
  hardBounced: n(c?.hardBounced), failed: n(c?.failed), complained: n(c?.complained), unsubscribed: n(c?.unsubscribed),
});

export function registerStatsPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/stats", async (_request, reply) => reply.redirect(CONSOLE_PREFIX, 303));

  scope.get("/", async (request, reply) => {
    const session = sessionOf(request);
    const raw = request.query as Record<string, unknown>;
    const str = (k: string) => (typeof raw[k] === "string" ? (raw[k] as string).trim() : "");
    const from = str("from"), to = str("to"), groupBy = str("groupBy");
    for (const [k, v] of [["From", from], ["To", to]]) {
      if (v && (!DAY.test(v) || Number.isNaN(Date.parse(`${v}T00:00:00Z`)))) throw refusal({ code: "invalid_request", message: `“${k}” must be a date (YYYY-MM-DD).` });
    }
    if (groupBy.length > 200) throw refusal({ code: "invalid_request", message: "The group is at most 200 characters." });
    // The service refuses ranges it will not compute (from after to, over 366 days): a 400 page.
    const res = await deps.clients.email.getStats(
      { workspaceId: session.workspaceId, from, to, groupBy: groupBy || undefined }, rpcOptions(request));
    const t = counters(res.totals);
    const days = res.days.map((d) => ({ date: d.date, c: counters(d.counters) }));
    const groups = res.groups.map((g) => ({ name: g.groupBy || "(no group)", c: counters(g.counters) }));
    const tiles = [
      ["Sent", t.sent, ""], ["Delivered", t.delivered, pct(t.delivered, t.sent)], ["Opened", t.opened, pct(t.opened, t.delivered)],
      ["Clicked", t.clicked, pct(t.clicked, t.delivered)], ["Bounced", t.bounced, pct(t.bounced, t.sent)], ["Complaints", t.complained, pct(t.complained, t.delivered)],
    ].map(([label, v, rate]) => `<div class="card"><div class="muted">${label}</div><div style="font-size:1.8rem;font-weight:700">${v}</div>${rate ? `<div class="muted">${rate}</div>` : ""}</div>`).join("");
    const dayTable = `<details><summary>Numbers per day</summary><div class="table-wrap"><table class="data"><caption class="sr-only">Emails per day</caption>
<thead><tr><th scope="col">Day (UTC)</th>${SERIES.map((s) => `<th scope="col" class="num">${s.label}</th>`).join("")}</tr></thead>
<tbody>${days.map((d) => `<tr><th scope="row">${d.date}</th>${SERIES.map((s) => `<td class="num">${d.c[s.key]}</td>`).join("")}</tr>`).join("")}</tbody></table></div></details>`;
    const groupSection = groups.length
      ? `${groupChart(groups)}<div class="table-wrap"><table class="data" id="groups"><caption class="sr-only">Emails per group</caption>
<thead><tr><th scope="col">Group</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Delivered</th><th scope="col" class="num">Open rate</th><th scope="col" class="num">Click rate</th><th scope="col" class="num">Bounced</th></tr></thead>
<tbody>${groups.map((g) => `<tr><th scope="row">${g.name === "(no group)" ? escapeHtml(g.name) : `<a href="${CONSOLE_PREFIX}?${escapeHtml(new URLSearchParams({ groupBy: g.name, from, to }).toString())}">${escapeHtml(g.name)}</a>`}</th><td class="num">${g.c.sent}</td><td class="num">${g.c.delivered}</td><td class="num">${pct(g.c.opened, g.c.delivered)}</td><td class="num">${pct(g.c.clicked, g.c.delivered)}</td><td class="num">${g.c.bounced}</td></tr>`).join("")}</tbody></table></div>`
      : `<p class="muted">No emails with a group in this range.</p>`;
    const body = `<h1>Overview</h1>
<form method="get" action="${CONSOLE_PREFIX}" class="card" aria-label="Stats range"><div class="row">
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${escapeHtml(res.from)}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${escapeHtml(res.to)}"></div>
<div class="field"><label for="groupBy">Group (groupBy)</label><input id="groupBy" name="groupBy" value="${escapeHtml(groupBy)}"></div>
<div class="field"><button type="submit">Show</button></div></div></form>
<p class="muted">Transactional emails from ${escapeHtml(res.from)} to ${escapeHtml(res.to)} (UTC days)${groupBy ? `, group <strong>${escapeHtml(groupBy)}</strong>` : ""}. Each email counts on the day it was sent.</p>
<div class="grid" id="totals">${tiles}</div>
<h2>Per day</h2><div class="card">${dailyChart(days)}</div>${dayTable}
<h2>Per group</h2>${groupSection}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Overview", session, active: "overview", flash: request.consoleFlash, body }));
  });
}
