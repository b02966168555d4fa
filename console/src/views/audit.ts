/**
 * The audit log (/console/audit): the view. The handler is pages/audit.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import { consoleUrl } from "../layout.js";
import { html, type Html } from "./html.js";
import { time } from "./page-parts.js";

/** The filters as typed (checked by the handler) and the page token of this page. */
export interface AuditFilters {
  actor: string;
  resource: string;
  since: string;
  until: string;
}

/** The change as "field: value" lines; a withheld value (a secret) shows as such. */
function summaryView(summary: Record<string, string>): Html | string {
  const lines = Object.entries(summary).map(([field, value], i) => html`${i ? html`<br>` : ""}<code>${field}</code>: ${value === "" ? html`<span class="muted">(withheld)</span>` : value}`);
  return lines.length ? html`${lines}` : "—";
}

function entryRow(e: AuditEntry, emails: ReadonlyMap<string, string>): Html {
  // An entry names a member by id; the page shows the address when it has no label of its own.
  const label = e.actor ? e.actor.label || (e.actor.kind === "member" ? emails.get(e.actor.id) : undefined) : undefined;
  const who = e.actor ? html`${label || e.actor.id || e.actor.kind}<br><span class="muted">${e.actor.kind}${e.actor.id ? `:${e.actor.id}` : ""}</span>` : "—";
  const what = e.resource ? html`${e.resource.type}${e.resource.id ? html`:<code>${e.resource.id}</code>` : ""}` : "—";
  return html`<tr><td data-label="When">${time(e.at ? timestampDate(e.at) : undefined)}</td><td data-label="Who">${who}</td>
<td data-label="Action"><code>${e.action}</code></td><td data-label="Resource">${what}</td>
<td data-label="Change">${summaryView(e.summary)}</td><td data-label="Request"><code>${e.requestId || "—"}</code></td></tr>`;
}

/** A page of entries (newest first) with the filter form and the links to the newest and older ones. */
export function auditView(entries: AuditEntry[], emails: ReadonlyMap<string, string>, filters: AuditFilters, pageToken: string, nextPageToken: string): Html {
  const rows = entries.map((e) => entryRow(e, emails));
  const filtered = filters.actor || filters.resource || filters.since || filters.until;
  const next = nextPageToken ? html`<a class="button secondary" href="${consoleUrl("/audit", { ...filters, page: nextPageToken })}">Older entries</a>` : "";
  const first = pageToken ? html`<a class="button secondary" href="${consoleUrl("/audit", { ...filters })}">Newest entries</a>` : "";
  return html`<h1>Audit log</h1>
<form method="get" action="${consoleUrl("/audit")}" class="card row" role="search" aria-label="Filter the audit log">
<div class="field"><label for="actor">Actor</label><input id="actor" name="actor" value="${filters.actor}" placeholder="member:mbr_… or key:key_…"></div>
<div class="field"><label for="resource">Resource</label><input id="resource" name="resource" value="${filters.resource}" placeholder="contact or contact:ctc_…"></div>
<div class="field"><label for="since">From (UTC)</label><input id="since" name="since" type="date" value="${filters.since}"></div>
<div class="field"><label for="until">To (UTC)</label><input id="until" name="until" type="date" value="${filters.until}"></div>
<div class="field"><button type="submit">Filter</button></div></form>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">Changes to the workspace, newest first</caption>
<thead><tr><th>When</th><th>Who</th><th>Action</th><th>Resource</th><th>Change</th><th>Request</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="6">No entries${filtered ? " match these filters" : " yet"}.</td></tr>`}</tbody></table></div>
<div class="actions">${first}${next}</div>
<p class="muted">Entries are kept for a year.</p>`;
}
