/**
 * Overview (the console's home): outcome counters per UTC day of transactional emails
 * (EmailService.GetStats, as GET /v1/stats/emails; also per groupBy) and of broadcasts (each
 * broadcast's progress counters, as the broadcast service keeps them, on the day it started
 * sending), drawn as server-rendered charts, each followed by the same numbers as a table
 * for screen readers and for anyone who prefers them. The markup is views/stats.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { BroadcastStatus, type BroadcastProgress } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { StatsCounters } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import type { ConsoleDeps } from "../deps.js";
import { CONSOLE_PREFIX, consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { render } from "../views/html.js";
import { overviewView, type SeriesKey } from "../views/stats.js";

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const n = (v: bigint | undefined) => Number(v ?? 0n);
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
    const body = overviewView({
      from: res.from, to: res.to, groupBy, totals: t, transactionalSent: tx.sent, days, groups,
      broadcasts: bc ? { count: bc.broadcasts, sent: b.sent, truncatedAt: bc.truncated ? BROADCAST_PAGES * 100 : undefined } : counted === "unavailable" ? "unavailable" : "none",
    });
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Overview", session, active: "overview", flash: request.consoleFlash, body: render(body) }));
  });
}
