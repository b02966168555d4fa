/**
 * The audit log (/console/audit), owners and admins: every state change of the workspace
 * through the API, the console and the CLI, newest first (ListAuditLog, kept a year), with
 * filters by actor ("member:mbr_…", "key:key_…" or a bare id), resource ("contact" or
 * "contact:<id>") and time (UTC dates), paged forward with the directory's page token.
 */
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { consolePage, consoleUrl, escapeHtml, formatTime } from "./layout.js";
import { sessionOf } from "./session.js";
import { atLeast } from "@mailroom/http/roles.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

const PAGE_SIZE = 50;
const FILTER = /^[A-Za-z0-9_.:@+-]{1,200}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** A `YYYY-MM-DD` (UTC) from the form: its start, or (until) the start of the next day. */
function dayOf(value: string, field: string, endOfDay: boolean): Date | undefined {
  if (!value) return undefined;
  const d = DAY.test(value) ? new Date(`${value}T00:00:00Z`) : new Date(NaN);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== value) throw refusal({ code: "invalid_request", status: 400, message: `${field}: a date as YYYY-MM-DD.` });
  return endOfDay ? new Date(d.getTime() + 86_400_000) : d;
}

function textFilter(value: unknown, field: string): string {
  const s = typeof value === "string" ? value.trim() : "";
  if (s && !FILTER.test(s)) throw refusal({ code: "invalid_request", status: 400, message: `${field}: letters, digits and _.:@+- only.` });
  return s;
}

/** The change as "field: value" lines; a withheld value (a secret) shows as such. */
function summaryText(summary: Record<string, string>): string {
  const lines = Object.entries(summary).map(([field, value]) => `<code>${escapeHtml(field)}</code>: ${value === "" ? '<span class="muted">(withheld)</span>' : escapeHtml(value)}`);
  return lines.length ? lines.join("<br>") : "—";
}

export function registerAuditPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/audit", async (request, reply) => {
    const session = sessionOf(request);
    if (!atLeast(session.role, "ADMIN")) throw refusal({ code: "forbidden", status: 403, message: "Only owners and admins read the audit log." });
    const q = request.query as Record<string, unknown>;
    const actor = textFilter(q.actor, "Actor");
    const resource = textFilter(q.resource, "Resource");
    const sinceText = typeof q.since === "string" ? q.since : "";
    const untilText = typeof q.until === "string" ? q.until : "";
    const since = dayOf(sinceText, "From", false);
    const until = dayOf(untilText, "To", true);
    const pageToken = typeof q.page === "string" && q.page.length <= 512 ? q.page : "";
    const opts = rpcOptions(request);
    const [{ entries, nextPageToken }, { members }] = await Promise.all([
      deps.clients.team.listAuditLog({
        workspaceId: session.workspaceId, actor, resource, pageToken, limit: PAGE_SIZE,
        since: since ? timestampFromDate(since) : undefined, until: until ? timestampFromDate(until) : undefined,
      }, opts),
      deps.clients.team.listMembers({ workspaceId: session.workspaceId }, opts),
    ]);
    // An entry names a member by id; the page shows the address when it has no label of its own.
    const emails = new Map(members.map((m) => [m.id, m.email]));
    const rows = entries.map((e) => {
      const label = e.actor ? e.actor.label || (e.actor.kind === "member" ? emails.get(e.actor.id) : undefined) : undefined;
      const who = e.actor ? `${escapeHtml(label || e.actor.id || e.actor.kind)}<br><span class="muted">${escapeHtml(e.actor.kind)}${e.actor.id ? `:${escapeHtml(e.actor.id)}` : ""}</span>` : "—";
      const what = e.resource ? `${escapeHtml(e.resource.type)}${e.resource.id ? `:<code>${escapeHtml(e.resource.id)}</code>` : ""}` : "—";
      return `<tr><td data-label="When">${formatTime(e.at ? timestampDate(e.at) : undefined)}</td><td data-label="Who">${who}</td>
<td data-label="Action"><code>${escapeHtml(e.action)}</code></td><td data-label="Resource">${what}</td>
<td data-label="Change">${summaryText(e.summary)}</td><td data-label="Request"><code>${escapeHtml(e.requestId || "—")}</code></td></tr>`;
    }).join("");
    const filters = { actor, resource, since: sinceText, until: untilText };
    const next = nextPageToken ? `<a class="button secondary" href="${consoleUrl("/audit", { ...filters, page: nextPageToken })}">Older entries</a>` : "";
    const first = pageToken ? `<a class="button secondary" href="${consoleUrl("/audit", filters)}">Newest entries</a>` : "";
    const body = `<h1>Audit log</h1>
<form method="get" action="${consoleUrl("/audit")}" class="card row" role="search" aria-label="Filter the audit log">
<div class="field"><label for="actor">Actor</label><input id="actor" name="actor" value="${escapeHtml(actor)}" placeholder="member:mbr_… or key:key_…"></div>
<div class="field"><label for="resource">Resource</label><input id="resource" name="resource" value="${escapeHtml(resource)}" placeholder="contact or contact:ctc_…"></div>
<div class="field"><label for="since">From (UTC)</label><input id="since" name="since" type="date" value="${escapeHtml(sinceText)}"></div>
<div class="field"><label for="until">To (UTC)</label><input id="until" name="until" type="date" value="${escapeHtml(untilText)}"></div>
<div class="field"><button type="submit">Filter</button></div></form>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">Changes to the workspace, newest first</caption>
<thead><tr><th>When</th><th>Who</th><th>Action</th><th>Resource</th><th>Change</th><th>Request</th></tr></thead>
<tbody>${rows || `<tr><td colspan="6">No entries${actor || resource || since || until ? " match these filters" : " yet"}.</td></tr>`}</tbody></table></div>
<div class="actions">${first}${next}</div>
<p class="muted">Entries are kept for a year.</p>`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Audit log", session, active: "audit", body, flash: request.consoleFlash }));
  });
}
