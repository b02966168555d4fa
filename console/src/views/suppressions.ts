/**
 * Suppressions (/console/suppressions): the views. The handlers are pages/suppressions.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { SuppressionReason, type Suppression } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { MappingTarget, Preview } from "../csv-mapping.js";
import { consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { mappingTableView } from "./csv-mapping.js";
import { html, trusted, type Html } from "./html.js";

/** Each reason: its API name, label, and how the list shows it. */
export const SUPPRESSION_REASONS: Array<{ name: string; value: SuppressionReason; label: string; tone: Tone }> = [
  { name: "hard_bounce", value: SuppressionReason.HARD_BOUNCE, label: "Hard bounce", tone: "bad" },
  { name: "complaint", value: SuppressionReason.COMPLAINT, label: "Spam complaint", tone: "bad" },
  { name: "unsubscribed", value: SuppressionReason.UNSUBSCRIBED, label: "Unsubscribed", tone: "warn" },
  { name: "manual", value: SuppressionReason.MANUAL, label: "Added by hand", tone: "info" },
  { name: "imported", value: SuppressionReason.IMPORTED, label: "Imported", tone: "info" },
];
export const reasonOf = (value: SuppressionReason) => SUPPRESSION_REASONS.find((r) => r.value === value);

function suppressionRow(s: Suppression, canEdit: boolean, csrf: Html): Html {
  const target = s.domain ? `@${s.domain}` : s.email;
  const shown = s.domain ? html`${s.domain} <span class="muted">(every address at it)</span>` : s.email;
  const r = reasonOf(s.reason);
  const complaint = s.reason === SuppressionReason.COMPLAINT;
  const remove = !canEdit ? "" : html`<form method="post" action="${consoleUrl("/suppressions/remove")}" class="row">${csrf}
<input type="hidden" name="target" value="${target}">${complaint
    ? html`<div class="check"><input type="checkbox" id="force-${target}" name="force" value="yes" required><label for="force-${target}">They reported our mail as spam: send to them again anyway</label></div>`
    : ""}<button type="submit" class="secondary small">Remove</button></form>`;
  return html`<tr><td data-label="Address or domain">${shown}</td>
<td data-label="Reason">${r ? trusted(statusBadge(r.label, r.tone)) : "Other"}</td>
<td data-label="Detail">${s.detail || "—"}</td><td data-label="Source">${s.source || "—"}</td>
<td data-label="Since">${trusted(formatTime(s.createdAt && timestampDate(s.createdAt)))}</td>${canEdit ? html`<td data-label="">${remove}</td>` : ""}</tr>`;
}

/** The list, searched and filtered by reason (its API name), with the add form for an editor; `csrf` is the hidden input. */
export function suppressionListView(opts: {
  suppressions: Suppression[]; search: string; reason?: string; nextCursor?: string; canEdit: boolean; csrf: string;
}): Html {
  const { search, reason, canEdit } = opts;
  const csrf = trusted(opts.csrf);
  const rows = opts.suppressions.map((s) => suppressionRow(s, canEdit, csrf));
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl("/suppressions", { search, reason, cursor: opts.nextCursor })}">More</a></p>` : "";
  const options = [html`<option value="">Any reason</option>`, ...SUPPRESSION_REASONS.map((r) => html`<option value="${r.name}"${r.name === reason ? " selected" : ""}>${r.label}</option>`)];
  const add = canEdit ? html`<form method="post" action="${consoleUrl("/suppressions")}" class="card row" aria-labelledby="add-h">${csrf}
<h2 id="add-h" style="margin:0;flex:1 1 100%">Add an address or a domain</h2>
<div class="field" style="flex:1 1 14rem"><label for="s-email">Email address or domain</label><input id="s-email" name="target" required style="width:100%" placeholder="ann@example.com or example.com" aria-describedby="s-email-h"></div>
<div class="field" style="flex:1 1 14rem"><label for="s-detail">Note (optional)</label><input id="s-detail" name="detail" maxlength="200" style="width:100%" placeholder="e.g. asked by phone"></div>
<div class="field"><button type="submit">Suppress</button></div>
<p id="s-email-h" class="muted" style="flex:1 1 100%;margin:0">A domain stops every address at it.</p></form>` : "";
  return html`<h1>Suppressions</h1>
<p class="muted">Addresses and domains that get no email from this workspace, whatever their contact status: unsubscribes, hard bounces, spam complaints, and what was added by hand or imported.</p>
<div class="actions">${canEdit ? html`<a class="button" href="${consoleUrl("/suppressions/import")}">Import CSV</a>` : ""}<a class="button secondary" href="${consoleUrl("/suppressions/export", { reason })}" download>Export CSV</a></div>
${add}
<form method="get" action="${consoleUrl("/suppressions")}" class="row card" role="search">
<div class="field" style="flex:1 1 14rem"><label for="search">Address or domain starts with</label><input id="search" name="search" type="search" value="${search}" style="width:100%"></div>
<div class="field"><label for="reason">Reason</label><select id="reason" name="reason">${options}</select></div>
<div class="field"><button type="submit">Filter</button></div></form>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Suppressed addresses and domains</caption>
<thead><tr><th>Address or domain</th><th>Reason</th><th>Detail</th><th>Source</th><th>Since</th>${canEdit ? html`<th><span class="sr-only">Remove</span></th>` : ""}</tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">${search || reason ? "Nothing suppressed matches." : "Nobody is suppressed."}</p>`}`;
}

/** The upload form of a CSV import. */
export function suppressionImportView(csrf: string): Html {
  return html`<h1>Import suppressions from CSV</h1>
<form method="post" action="${consoleUrl("/suppressions/import")}" enctype="multipart/form-data" class="card">${trusted(csrf)}
<div class="field"><label for="file">CSV file (up to 10 MB)</label><input id="file" name="file" type="file" accept=".csv,text/csv" required aria-describedby="file-h"></div>
<div id="file-h" class="muted"><p>Any CSV with a header row: an export of this list, or another provider's bounces, spam reports or unsubscribes.
The next page shows its first rows and lets you say which column holds the address or domain, and which the reason, date and source.</p>
<p>Importing the same file again changes nothing. To bring a whole account from Postmark, SendGrid, Mailchimp or Resend, <code>npx mailroom import</code> reads their own export files (see docs/switching-to-mailroom.md).</p></div>
<div class="actions"><button type="submit">Preview</button><a class="button secondary" href="${consoleUrl("/suppressions")}">Back to suppressions</a></div></form>`;
}

/** The preview of an upload with a mapping of each column and the default reason. */
export function suppressionMappingView(opts: { uploadId: string; preview: Preview; targets: MappingTarget[]; guess: (header: string) => string; csrf: string }): Html {
  const reasons = SUPPRESSION_REASONS.map((r) => html`<option value="${r.name}"${r.name === "imported" ? " selected" : ""}>${r.label}</option>`);
  return html`<h1>Import suppressions: map the columns</h1>
<form method="post" action="${consoleUrl(`/suppressions/import/${opts.uploadId}`)}" class="card">${trusted(opts.csrf)}
${mappingTableView(opts.preview, opts.targets, opts.guess)}
<div class="field"><label for="default-reason">Reason of rows without one</label><select id="default-reason" name="defaultReason">${reasons}</select></div>
<p class="muted">Each row needs an address or a domain. A reason column may hold hard_bounce, complaint, unsubscribed, manual or imported (also bounce, spam, unsubscribe).
Dates are ISO 8601 (2025-03-01 or 2025-03-01T10:00:00Z). An address already suppressed keeps its entry.</p>
<div class="actions"><button type="submit">Import</button><a class="button secondary" href="${consoleUrl("/suppressions/import")}">Choose another file</a></div></form>`;
}

export interface SuppressionImportReport {
  rows: number;
  created: number;
  existing: number;
  rejected: Array<{ line: number; value: string; reason: string }>;
  rejectedCount: number;
}

/** What an import did, with the first rejected rows. */
export function suppressionReportView(report: SuppressionImportReport): Html {
  const rejected = report.rejected.map((r) => html`<tr><td data-label="Line">${r.line}</td><td data-label="Value">${r.value || "—"}</td><td data-label="Reason">${r.reason}</td></tr>`);
  return html`<h1>Suppressions imported</h1>
<div class="card" role="status"><p><strong>${report.rows}</strong> rows: <strong>${report.created}</strong> suppressed, <strong>${report.existing}</strong> already suppressed, <strong>${report.rejectedCount}</strong> rejected.</p></div>
${rejected.length ? html`<h2>Rejected rows</h2><div class="table-wrap"><table class="data stack"><caption class="sr-only">Rows not imported</caption>
<thead><tr><th>Line</th><th>Address or domain</th><th>Why</th></tr></thead><tbody>${rejected}</tbody></table></div>
${report.rejectedCount > report.rejected.length ? html`<p class="muted">… and ${report.rejectedCount - report.rejected.length} more.</p>` : ""}` : ""}
<div class="actions"><a class="button" href="${consoleUrl("/suppressions")}">See the suppressions</a><a class="button secondary" href="${consoleUrl("/suppressions/import")}">Import another file</a></div>`;
}
