/**
 * Contacts (/console/contacts): the views of the list, one contact, and the CSV import. The
 * handlers are pages/contacts.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ContactSource, ContactStatus, PropertyType, SuppressionReason, type Contact, type ContactEvent, type ContactProperty, type Suppression } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { jobJson, type ImportJob } from "../contacts-import.js";
import type { MappingTarget, Preview } from "../csv-mapping.js";
import { consoleUrl, formatTime, statusBadge, type Tone } from "../layout.js";
import { mappingTableView } from "./csv-mapping.js";
import { html, trusted, type Html } from "./html.js";

export const CONTACT_STATUSES: Array<{ value: keyof typeof ContactStatus; label: string; tone: Tone }> = [
  { value: "SUBSCRIBED", label: "Subscribed", tone: "ok" },
  { value: "UNSUBSCRIBED", label: "Unsubscribed", tone: "warn" },
  { value: "OPT_IN_PENDING", label: "Opt-in pending", tone: "info" },
  { value: "ARCHIVED", label: "Archived", tone: "info" },
  { value: "BANNED", label: "Banned", tone: "bad" },
];
const statusBadgeOf = (s: ContactStatus) => {
  const found = CONTACT_STATUSES.find((x) => ContactStatus[x.value] === s);
  return trusted(found ? statusBadge(found.label, found.tone) : statusBadge("Unknown", "info"));
};
const REASONS: Record<number, string> = {
  [SuppressionReason.UNSUBSCRIBED]: "Unsubscribed",
  [SuppressionReason.HARD_BOUNCE]: "Hard bounce",
  [SuppressionReason.COMPLAINT]: "Spam complaint",
  [SuppressionReason.MANUAL]: "Added by hand",
  [SuppressionReason.IMPORTED]: "Imported",
};
const time = (d: Date | undefined) => trusted(formatTime(d));

/** The list, searched and filtered by status, newest first. */
export function contactListView(opts: { contacts: Contact[]; search: string; status: string; totalCount?: bigint; nextCursor?: string; canEdit: boolean }): Html {
  const { search, status, totalCount } = opts;
  const rows = opts.contacts.map((c) => html`<tr><td data-label="Email"><a href="${consoleUrl(`/contacts/${c.id}`)}">${c.email}</a></td>
<td data-label="Name">${[c.firstName, c.lastName].filter(Boolean).join(" ") || "—"}</td>
<td data-label="Status">${statusBadgeOf(c.status)}</td>
<td data-label="Added">${time(c.createdAt && timestampDate(c.createdAt))}</td></tr>`);
  const options = [html`<option value="">Any status</option>`, ...CONTACT_STATUSES.map((s) => html`<option value="${s.value}"${s.value === status ? " selected" : ""}>${s.label}</option>`)];
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl("/contacts", { search, status, cursor: opts.nextCursor })}">More contacts</a></p>` : "";
  return html`<h1>Contacts</h1>
<div class="actions">${opts.canEdit ? html`<a class="button" href="${consoleUrl("/contacts/new")}">Add contact</a><a class="button" href="${consoleUrl("/contacts/import")}">Import CSV</a>` : ""}<a class="button secondary" href="${consoleUrl("/suppressions")}">Suppression list</a></div>
<form method="get" action="${consoleUrl("/contacts")}" class="row card" role="search">
<div class="field" style="flex:1 1 14rem"><label for="search">Search email or name</label><input id="search" name="search" type="search" value="${search}" style="width:100%"></div>
<div class="field"><label for="status">Status</label><select id="status" name="status">${options}</select></div>
<div class="field"><button type="submit">Filter</button></div></form>
<p class="muted" role="status">${totalCount !== undefined ? `${totalCount} matching contact${totalCount === 1n ? "" : "s"}` : ""}</p>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Contacts, newest first</caption>
<thead><tr><th>Email</th><th>Name</th><th>Status</th><th>Added</th></tr></thead><tbody>${rows}</tbody></table></div>${more}` : html`<p class="muted">No contacts match.</p>`}`;
}

/** The upload form of a CSV import; `csrf` is the hidden input. */
export function contactImportView(csrf: string): Html {
  return html`<h1>Import contacts from CSV</h1>
<form method="post" action="${consoleUrl("/contacts/import/preview")}" enctype="multipart/form-data" class="card">${trusted(csrf)}
<div class="field"><label for="file">CSV file (up to 10 MB)</label><input id="file" name="file" type="file" accept=".csv,text/csv" required aria-describedby="file-h"></div>
<div id="file-h" class="muted"><p>The first row names the columns: <code>email</code> (required), <code>firstName</code>, <code>lastName</code>,
<code>timezone</code>, <code>status</code> or <code>subscribed</code>, and any contact property of this workspace by its slug. A contact that exists already is updated.</p>
<p>The next page shows the first rows and lets you choose what each column is (or leave it out), whatever its header says.
Rows that cannot be imported are listed with their line number and the reason; every other row is imported.</p></div>
<div class="actions"><button type="submit">Preview</button><a class="button secondary" href="${consoleUrl("/contacts")}">Back to contacts</a></div></form>`;
}

/** The preview of an upload with a mapping of each column. */
export function contactMappingView(opts: { uploadId: string; preview: Preview; targets: MappingTarget[]; guess: (header: string) => string; csrf: string }): Html {
  return html`<h1>Import contacts: map the columns</h1>
<form method="post" action="${consoleUrl(`/contacts/import/preview/${opts.uploadId}`)}" class="card">${trusted(opts.csrf)}
${mappingTableView(opts.preview, opts.targets, opts.guess)}
<p class="muted">One column must be the email address. A column left out is not imported; to import it as a new property, create the property first (Settings or <code>npx mailroom property create &lt;slug&gt; &lt;type&gt;</code>) and upload again.</p>
<div class="actions"><button type="submit">Import</button><a class="button secondary" href="${consoleUrl("/contacts/import")}">Choose another file</a></div></form>`;
}

/** A JSON property value as short text. */
const showValue = (v: unknown) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));
/** A property value as the edit form's text (the audience unit reads it back by the property's type). */
const textOf = (v: unknown) => (v === null || v === undefined ? "" : Array.isArray(v) ? v.join(", ") : String(v));
const TYPE_HINT: Partial<Record<PropertyType, string>> = {
  [PropertyType.NUMBER]: "a number",
  [PropertyType.BOOLEAN]: "true or false",
  [PropertyType.DATE]: "a date, YYYY-MM-DD",
  [PropertyType.SELECT]: "one of the options",
  [PropertyType.MULTI_SELECT]: "options, comma separated",
};

/** The edit form: names, timezone and every custom property, as text (`typed`: as the user typed it). */
function editForm(contact: Contact, props: ContactProperty[], csrf: Html, typed?: Record<string, string>): Html {
  const value = (key: string, current: unknown) => (typed ? (typed[key] ?? "") : textOf(current));
  const field = (key: string, label: string, current: unknown, hint = "") =>
    html`<div class="field"><label for="e-${key}">${label}</label>${hint ? html`<p class="muted" id="e-${key}-h" style="margin:0 0 .25rem">${hint}</p>` : ""}
<input id="e-${key}" name="${key}" value="${value(key, current)}" style="width:100%"${hint ? html` aria-describedby="e-${key}-h"` : ""}></div>`;
  const custom = props.map((p) => {
    const options = p.options.length ? `; options: ${p.options.map((o) => o.value).join(", ")}` : "";
    return field(`prop.${p.slug}`, p.displayName || p.slug, contact.properties?.[p.slug], `${p.slug}: ${TYPE_HINT[p.type] ?? "text"}${options}`);
  });
  return html`<form method="post" action="${consoleUrl(`/contacts/${contact.id}`)}" class="card">${csrf}
<div class="grid">${field("firstName", "First name", contact.firstName)}${field("lastName", "Last name", contact.lastName)}</div>
${field("timezone", "Timezone", contact.timezone, "An IANA name such as Europe/Paris; empty for none.")}
${custom}<p class="muted">An empty field clears the value. The email address cannot change.</p>
<div class="actions"><button type="submit">Save contact</button></div></form>`;
}

/** The contact's forms: edit, unsubscribe (or resubscribe) and delete. */
function actions(contact: Contact, props: ContactProperty[], csrf: Html, suppressed: SuppressionReason | undefined, typed?: Record<string, string>): Html {
  const base = consoleUrl(`/contacts/${contact.id}`);
  const unsubscribed = contact.status === ContactStatus.UNSUBSCRIBED || suppressed === SuppressionReason.UNSUBSCRIBED;
  const blocked = suppressed === SuppressionReason.HARD_BOUNCE || suppressed === SuppressionReason.COMPLAINT || suppressed === SuppressionReason.MANUAL;
  const subscription = unsubscribed
    ? html`<form method="post" action="${base}/resubscribe">${csrf}<p class="muted">Resubscribe only someone who asked for it: it lifts their unsubscribe.${blocked ? " A bounce, complaint or manual suppression stays." : ""}</p><button type="submit" class="secondary">Resubscribe</button></form>`
    : html`<form method="post" action="${base}/unsubscribe" data-confirm="Unsubscribe ${contact.email}?">${csrf}<p class="muted">As their unsubscribe link does: no broadcast and no email reaches them until they resubscribe.</p><button type="submit" class="secondary">Unsubscribe</button></form>`;
  return html`<section aria-labelledby="edit-h"><h2 id="edit-h">Edit</h2>${editForm(contact, props, csrf, typed)}</section>
<section aria-labelledby="act-h"><h2 id="act-h">Subscription and deletion</h2><div class="grid">
<div class="card">${subscription}</div>
<div class="card"><form method="post" action="${base}/delete" data-confirm="Delete the contact ${contact.email}? This cannot be undone.">${csrf}
<p class="muted">Deletes the contact and its properties. A suppression of the address stays, so deleting does not make it mailable again.</p>
<button type="submit" class="danger">Delete contact</button></form></div></div></section>`;
}

/** One history line: when, what (markup), and its tone. */
interface HistoryEntry {
  at: Date;
  text: Html;
  tone: string;
}

function history(contact: Contact, events: ContactEvent[], suppression: Suppression | undefined): HistoryEntry[] {
  return [
    ...events.map((e) => ({
      at: e.timestamp ? timestampDate(e.timestamp) : e.receivedAt ? timestampDate(e.receivedAt) : new Date(0),
      text: html`<strong>${e.name}</strong>${Object.keys(e.properties ?? {}).length ? html` <code>${JSON.stringify(e.properties)}</code>` : ""}`,
      tone: "",
    })),
    ...(contact.updatedAt && contact.createdAt && contact.updatedAt.seconds !== contact.createdAt.seconds
      ? [{ at: timestampDate(contact.updatedAt), text: html`Contact updated`, tone: "" }] : []),
    ...(contact.createdAt ? [{ at: timestampDate(contact.createdAt), text: html`Contact created (${ContactSource[contact.source] ?? "unknown source"})`, tone: "ok" }] : []),
    ...(suppression?.createdAt ? [{ at: timestampDate(suppression.createdAt), text: html`Suppressed: ${REASONS[suppression.reason] ?? "other"}`, tone: "bad" }] : []),
  ].sort((a, b) => b.at.getTime() - a.at.getTime());
}

/**
 * One contact: properties, history, the activity timeline, webhook history, automation runs
 * and, for an editor, its forms. `activity` is a view; `hooks` and `automations` are markup
 * the webhook and automation sections built (escaped there); no `hooks`: the webhooks unit did not answer.
 */
export function contactView(opts: {
  contact: Contact; events: ContactEvent[]; suppression?: Suppression; definitions: ContactProperty[];
  activity: Html; hooks?: string; automations: string; canEdit: boolean; csrf: string; typed?: Record<string, string>;
}): Html {
  const { contact, suppression } = opts;
  const builtIns: Array<[string, string]> = [
    ["Email", contact.email], ["First name", contact.firstName], ["Last name", contact.lastName], ["Timezone", contact.timezone],
    ["Source", ContactSource[contact.source] ?? ""], ["Id", contact.id],
  ];
  const dl = builtIns.map(([k, v]) => html`<dt class="muted">${k}</dt><dd style="margin:0 0 .5rem">${v || "—"}</dd>`);
  const propRows = Object.entries(contact.properties ?? {}).map(([k, v]) => html`<tr><th scope="row"><code>${k}</code></th><td>${showValue(v)}</td></tr>`);
  const entries = history(contact, opts.events, suppression);
  return html`<h1>${contact.email} ${statusBadgeOf(contact.status)}${suppression ? html` ${trusted(statusBadge(`Suppressed: ${REASONS[suppression.reason] ?? "other"}`, "bad"))}` : ""}</h1>
<div class="grid"><section class="card" aria-labelledby="p-h"><h2 id="p-h" style="margin-top:0">Properties</h2><dl>${dl}</dl>
${propRows.length ? html`<div class="table-wrap"><table class="data"><caption class="sr-only">Custom properties</caption><tbody>${propRows}</tbody></table></div>` : html`<p class="muted">No custom properties.</p>`}</section>
<section class="card" aria-labelledby="h-h"><h2 id="h-h" style="margin-top:0">History</h2>
${entries.length ? html`<ol class="timeline">${entries.map((h) => html`<li${h.tone ? html` class="${h.tone}"` : ""}>${time(h.at)}<br>${h.text}</li>`)}</ol>` : html`<p class="muted">Nothing yet.</p>`}</section></div>
<section aria-labelledby="act-tl-h"><h2 id="act-tl-h">Activity</h2>
<p class="muted">Emails sent to this contact with their opens, clicks and bounces, its events, automation runs, webhook deliveries, unsubscribe and creation, newest first.</p>
${opts.activity}</section>
<section aria-labelledby="wh-h"><h2 id="wh-h">Webhook history</h2>
<p class="muted">The contact's CONTACT_* events that went to this workspace's webhooks, newest first.</p>
${opts.hooks === undefined ? html`<p class="muted">The webhook history is not available right now.</p>` : trusted(opts.hooks)}</section>
<section aria-labelledby="aut-h"><h2 id="aut-h">Automations</h2>
<p class="muted">The automation runs this contact is in, newest first, with each step's time.</p>
${trusted(opts.automations)}</section>
${opts.canEdit ? actions(contact, opts.definitions, trusted(opts.csrf), suppression?.reason, opts.typed) : ""}
<p><a href="${consoleUrl("/contacts")}">Back to contacts</a></p>`;
}

/** The script of a running import's page: polls the job's JSON, reloads once done (the report is server-rendered). */
function pollScript(url: string): Html {
  // JSON.stringify of a console path (ids of [0-9a-f]) cannot end the <script>.
  return html`<noscript><meta http-equiv="refresh" content="2"></noscript><script>(function(){var bar=document.getElementById("bar"),txt=document.getElementById("bar-text");
function tick(){fetch(${trusted(JSON.stringify(url))},{headers:{accept:"application/json"},credentials:"same-origin"}).then(function(r){return r.ok?r.json():null}).then(function(d){if(!d)return;
bar.value=d.percent;txt.textContent=d.percent+"% · "+d.rows+" rows · "+d.rejected+" rejected";if(d.state!=="running")location.reload();else setTimeout(tick,700)}).catch(function(){setTimeout(tick,3000)})}
setTimeout(tick,500)})();</script>`;
}

/** An import job's page: its progress and, once done, the report of rejected rows. */
export function importJobView(job: ImportJob): Html {
  const j = jobJson(job);
  const running = job.state === "running";
  const url = consoleUrl(`/contacts/import/${job.id}`);
  const s = job.summary;
  const report = s
    ? html`<h2>Result</h2><ul><li>${s.rows} rows read</li><li data-created>${s.created} contacts created</li><li>${s.updated} updated</li>
<li data-rejected-count>${s.rejectedCount} rejected</li></ul>
${s.stopped ? html`<p class="flash error" role="alert">Stopped early at line ${s.stopped.line}: ${s.stopped.reason}</p>` : ""}
${s.rejected.length ? html`<h3 id="rejected-h">Rejected rows</h3><div class="table-wrap"><table class="data stack" aria-labelledby="rejected-h">
<thead><tr><th class="num">Line</th><th>Email</th><th>Reason</th></tr></thead><tbody>${s.rejected.map((r) =>
      html`<tr><td class="num" data-label="Line">${r.line}</td><td data-label="Email">${r.email || "—"}</td><td data-label="Reason">${r.reason}</td></tr>`)}</tbody></table></div>
${s.rejectedCount > s.rejected.length ? html`<p class="muted">Only the first ${s.rejected.length} rejected rows are listed.</p>` : ""}` : ""}`
    : "";
  const failed = job.state === "failed" ? html`<p class="flash error" role="alert">The import failed: ${job.error ?? ""}</p>` : "";
  const badge = trusted(statusBadge(running ? "Importing" : job.state === "done" ? "Done" : "Failed", job.state === "done" ? "ok" : job.state === "failed" ? "bad" : "warn"));
  return html`<h1>Contact import ${badge}</h1>
<div class="card"><label for="bar">Progress</label><progress id="bar" max="100" value="${j.percent}" style="width:100%;height:1.5rem">${j.percent}%</progress>
<p id="bar-text" role="status" aria-live="polite">${j.percent}% · ${j.rows} rows · ${j.rejected} rejected</p>
${running ? html`<p><a href="${url}">Reload</a></p>` : ""}</div>${failed}${report}
<div class="actions"><a class="button secondary" href="${consoleUrl("/contacts")}">Back to contacts</a><a class="button secondary" href="${consoleUrl("/contacts/import")}">Import another file</a></div>${running ? pollScript(url) : ""}`;
}
