/**
 * Overview (the console's home): outcome counters per UTC day of transactional emails
 * (EmailService.GetStats, as GET /v1/stats/emails; also per groupBy) and of broadcasts (each
 * broadcast's progress counters, as the broadcast service keeps them, on the day it started
 * sending), drawn as server-rendered charts, each followed by the same numbers as a table
 * for screen readers and for anyone who prefers them.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BroadcastStatus, type BroadcastProgress } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { StatsCounters } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import type { ConsoleDeps } from "./deps.js";
import { CONSOLE_PREFIX, consolePage, escapeHtml } from "./layout.js";
import { sessionOf } from "./session.js";
import { VIEW_W, chartFrame, legendView, type Tick } from "./views/chart.js";
import { render, trusted } from "./views/html.js";

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

/** Grouped bars per day; the y axis rounds up to a readable maximum. Text is HTML (chart.ts). */
function dailyChart(days: Array<{ date: string; c: Record<SeriesKey, number> }>): string {
  const H = 1000;
  const max = Math.max(1, ...days.flatMap((d) => SERIES.map((s) => d.c[s.key])));
  const step = 10 ** Math.floor(Math.log10(max));
  const yMax = Math.ceil(max / step) * step;
  const slot = VIEW_W / Math.max(1, days.length);
  const barW = Math.max(1, (slot * 0.8) / SERIES.length);
  const y = (v: number) => H - (v / yMax) * H;
  const gridValues = [...new Set([0, 0.25, 0.5, 0.75, 1].map((f) => Math.round(yMax * f)))];
  const grid = gridValues.map((v) => `<line x1="0" x2="${VIEW_W}" y1="${y(v)}" y2="${y(v)}" stroke="#d4d4d8" vector-effect="non-scaling-stroke"/>`).join("");
  const bars = days.map((d, i) => {
    const x0 = i * slot + slot * 0.1;
    return SERIES.map((s, j) => {
      const v = d.c[s.key];
      return v ? `<rect x="${(x0 + j * barW).toFixed(1)}" y="${y(v).toFixed(1)}" width="${barW.toFixed(1)}" height="${(H - y(v)).toFixed(1)}" fill="${s.color}"><title>${d.date}: ${v} ${s.label.toLowerCase()}</title></rect>` : "";
    }).join("");
  }).join("");
  // At most 8 day labels; at phone width every other one of them (the minor ones) is left out.
  const labelEvery = Math.ceil(days.length / 8);
  const ticks: Tick[] = [
    ...gridValues.map((v): Tick => ({ kind: "y", y: y(v) / H, text: String(v) })),
    ...days.flatMap((d, i): Tick[] => i % labelEvery === 0
      ? [{ kind: "x", x: (i + 0.5) / Math.max(1, days.length), text: d.date.slice(5), minor: (i / labelEvery) % 2 === 1 }] : []),
  ];
  const svg = `<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="daily-title" focusable="false"><title id="daily-title">Emails per day: ${SERIES.map((s) => s.label.toLowerCase()).join(", ")}. The table below has the numbers.</title>${grid}${bars}</svg>`;
  return render(chartFrame({ svg: trusted(svg), ticks, height: "14rem", className: "daily" })) + render(legendView(SERIES.map((s) => ({ label: s.label, colour: s.color }))));
}

/** Horizontal bars per group: sent, with the opened share inside; names and values are HTML. */
function groupChart(groups: Array<{ name: string; c: Record<SeriesKey, number> }>): string {
  const rowH = 34, H = groups.length * rowH;
  const max = Math.max(1, ...groups.map((g) => g.c.sent));
  // Bars reach 85 % at most: the value label goes after the bar.
  const w = (v: number) => (0.85 * VIEW_W * v) / max;
  const rows = groups.map((g, i) => {
    const y = i * rowH;
    return `<rect x="0" y="${y + 6}" width="${w(g.c.sent).toFixed(1)}" height="22" fill="#1d4ed8"><title>${escapeHtml(g.name)}: ${g.c.sent} sent</title></rect>
<rect x="0" y="${y + 12}" width="${w(g.c.opened).toFixed(1)}" height="10" fill="#c4b5fd"><title>${escapeHtml(g.name)}: ${g.c.opened} opened</title></rect>`;
  }).join("");
  const ticks = groups.flatMap((g, i): Tick[] => [
    { kind: "y", y: (i + 0.5) / groups.length, text: g.name },
    { kind: "v", x: w(g.c.sent) / VIEW_W, y: (i + 0.5) / groups.length, text: String(g.c.sent) },
  ]);
  const svg = `<svg class="chart" viewBox="0 0 ${VIEW_W} ${H}" preserveAspectRatio="none" role="img" aria-labelledby="group-title" focusable="false"><title id="group-title">Emails sent per group, with the opened share as the inner bar. The table below has the numbers.</title>${rows}</svg>`;
  return render(chartFrame({ svg: trusted(svg), ticks, height: `${(H / 16).toFixed(3)}rem`, className: "groups" }));
}

const counters = (c: StatsCounters | undefined): Record<SeriesKey, number> & { hardBounced: number; failed: number; complained: number; unsubscribed: number } => ({
  sent: n(c?.sent), delivered: n(c?.delivered), opened: n(c?.opened), clicked: n(c?.clicked), bounced: n(c?.bounced),
  hardBounced: n(c?.hardBounced), failed: n(c?.failed), complained: n(c?.complained), unsubscribed: n(c?.unsubscribed),
});

type Counts = ReturnType<typeof counters>;
const zero = (): Counts => counters(undefined);
const COUNT_KEYS = Object.keys(zero()) as Array<keyof Counts>;
function addInto(into: Counts, from: Counts): void {
  for (const k of COUNT_KEYS) into[k] += from[k];
}
const progressCounts = (p: BroadcastProgress | undefined): Counts => ({
  ...zero(), sent: n(p?.sent), delivered: n(p?.delivered), opened: n(p?.opened), clicked: n(p?.clicked), bounced: n(p?.bounced),
  failed: n(p?.failed), unsubscribed: n(p?.unsubscribed),
});

/** Broadcasts listed at most (pages of 100) to find the ones that started in the range. */
const BROADCAST_PAGES = 10;

/**
 * Messages of the broadcasts that started sending in [from, to] (UTC days), per start day,
 * from each broadcast's progress counters (one list call per 100 broadcasts; no per-message
 * reads). null when the workspace has no broadcast access (the service refuses the list);
 * "unavailable" when the broadcast service does not answer (the overview still shows the
 * transactional numbers, and says so).
 */
async function broadcastCounts(deps: ConsoleDeps, request: FastifyRequest, workspaceId: string, from: string, to: string) {
  const days = new Map<string, Counts>();
  let cursor = "";
  let broadcasts = 0;
  for (let page = 0; page < BROADCAST_PAGES; page++) {
    let res;
    try {
      res = await deps.clients.broadcast.listBroadcasts({ workspaceId, page: { limit: 100, cursor } }, rpcOptions(request));
    } catch (err) {
      const status = bodyFromError(err).statusCode;
      if (page === 0 && status < 500) return null;
      request.log.warn({ err }, "overview: broadcast counts unavailable");
      return "unavailable" as const;
    }
    for (const b of res.broadcasts) {
      if (!b.sentAt || (b.status !== BroadcastStatus.IN_PROGRESS && b.status !== BroadcastStatus.COMPLETED)) continue;
      const day = timestampDate(b.sentAt).toISOString().slice(0, 10);
      if (day < from || day > to) continue;
      if (!days.has(day)) days.set(day, zero());
      addInto(days.get(day)!, progressCounts(b.progress));
      broadcasts++;
    }
    if (!res.page?.hasMore) return { days, broadcasts, truncated: false };
    cursor = res.page.nextCursor;
  }
  return { days, broadcasts, truncated: true };
}

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
    // A group (groupBy) is a transactional email's: a filtered overview has no broadcasts.
    const counted = groupBy ? null : await broadcastCounts(deps, request, session.workspaceId, res.from, res.to);
    const bc = counted === "unavailable" ? null : counted;
    const tx = counters(res.totals);
    const b = zero();
    for (const c of bc?.days.values() ?? []) addInto(b, c);
    const t = zero();
    addInto(t, tx);
    addInto(t, b);
    const days = res.days.map((d) => {
      const c = counters(d.counters);
      const broadcast = bc?.days.get(d.date);
      if (broadcast) addInto(c, broadcast);
      return { date: d.date, c, broadcastSent: broadcast?.sent ?? 0 };
    });
    const groups = res.groups.map((g) => ({ name: g.groupBy || "(no group)", c: counters(g.counters) }));
    const split = bc ? `<div class="muted" data-split>${tx.sent} transactional · ${b.sent} broadcast</div>` : "";
    const tiles = [
      ["Sent", t.sent, "", split], ["Delivered", t.delivered, pct(t.delivered, t.sent)], ["Opened", t.opened, pct(t.opened, t.delivered)],
      ["Clicked", t.clicked, pct(t.clicked, t.delivered)], ["Bounced", t.bounced, pct(t.bounced, t.sent)], ["Complaints", t.complained, pct(t.complained, t.delivered)],
    ].map(([label, v, rate, extra]) => `<div class="card"><div class="muted">${label}</div><div style="font-size:1.8rem;font-weight:700" data-total="${String(label).toLowerCase()}">${v}</div>${rate ? `<div class="muted">${rate}</div>` : ""}${extra ?? ""}</div>`).join("");
    const dayTable = `<details><summary>Numbers per day</summary><div class="table-wrap"><table class="data"><caption class="sr-only">Emails per day</caption>
<thead><tr><th scope="col">Day (UTC)</th>${SERIES.map((s) => `<th scope="col" class="num">${s.label}</th>`).join("")}${bc ? `<th scope="col" class="num">Of which broadcast, sent</th>` : ""}</tr></thead>
<tbody>${days.map((d) => `<tr><th scope="row">${d.date}</th>${SERIES.map((s) => `<td class="num">${d.c[s.key]}</td>`).join("")}${bc ? `<td class="num">${d.broadcastSent}</td>` : ""}</tr>`).join("")}</tbody></table></div></details>`;
    const groupSection = groups.length
      ? `${groupChart(groups)}<div class="table-wrap"><table class="data" id="groups"><caption class="sr-only">Emails per group</caption>
<thead><tr><th scope="col">Group</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Delivered</th><th scope="col" class="num">Open rate</th><th scope="col" class="num">Click rate</th><th scope="col" class="num">Bounced</th></tr></thead>
<tbody>${groups.map((g) => `<tr><th scope="row">${g.name === "(no group)" ? escapeHtml(g.name) : `<a href="${CONSOLE_PREFIX}?${escapeHtml(new URLSearchParams({ groupBy: g.name, from, to }).toString())}">${escapeHtml(g.name)}</a>`}</th><td class="num">${g.c.sent}</td><td class="num">${g.c.delivered}</td><td class="num">${pct(g.c.opened, g.c.delivered)}</td><td class="num">${pct(g.c.clicked, g.c.delivered)}</td><td class="num">${g.c.bounced}</td></tr>`).join("")}</tbody></table></div>`
      : `<p class="muted">No transactional emails with a group in this range.</p>`;
    const body = `<h1>Overview</h1>
<form method="get" action="${CONSOLE_PREFIX}" class="card" aria-label="Stats range"><div class="row">
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${escapeHtml(res.from)}"></div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${escapeHtml(res.to)}"></div>
<div class="field"><label for="groupBy">Group (groupBy)</label><input id="groupBy" name="groupBy" value="${escapeHtml(groupBy)}"></div>
<div class="field"><button type="submit">Show</button></div></div></form>
<p class="muted">${bc ? "Transactional and broadcast emails" : "Transactional emails"} from ${escapeHtml(res.from)} to ${escapeHtml(res.to)} (UTC days)${groupBy ? `, group <strong>${escapeHtml(groupBy)}</strong> (groups are transactional only)` : ""}. Each transactional email counts on the day it was sent${bc ? `; a broadcast's messages count on the day it started sending (${bc.broadcasts} broadcast${bc.broadcasts === 1 ? "" : "s"} in this range${bc.truncated ? `, among the newest ${BROADCAST_PAGES * 100} broadcasts` : ""})` : ""}.</p>
${counted === "unavailable" ? `<p class="flash error" role="status">Broadcast numbers are unavailable right now (the broadcast service did not answer): these are transactional emails only.</p>` : ""}
<div class="grid" id="totals">${tiles}</div>
<h2>Per day</h2><div class="card">${dailyChart(days)}</div>${dayTable}
<h2>Per group</h2><p class="muted">Transactional emails by their <code>groupBy</code>.</p>${groupSection}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Overview", session, active: "overview", flash: request.consoleFlash, body }));
  });
}
