/**
 * Segments (/console/segments): the views. The handlers are pages/segments.ts; the filter
 * builder's markup is ../filter-builder.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ContactStatus, type Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Segment } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import { html, trusted, type Html } from "./html.js";

/** Pretty JSON of a filter's text (as given when it does not parse). */
export function prettyFilter(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 1);
  } catch {
    return text;
  }
}

const updated = (s: Segment) => trusted(formatTime(s.updatedAt && timestampDate(s.updatedAt)));

/** The editor: the name and the filter builder (`builder`, markup of filterBuilderHtml); `csrf` is the hidden input. */
export function segmentEditorView(opts: { segment?: Segment; name: string; builder: string; csrf: string }): Html {
  const { segment } = opts;
  const back = segment ? consoleUrl(`/segments/${segment.id}`) : consoleUrl("/segments");
  return html`<h1>${segment ? `Edit ${segment.name}` : "New segment"}</h1>
<form method="post" action="${back}" id="segment-form">${trusted(opts.csrf)}
<div class="card"><div class="field"><label for="name">Name</label><input id="name" name="name" required maxlength="200" value="${opts.name}" style="width:100%"></div></div>
${trusted(opts.builder)}
<div class="actions"><button type="submit">Save segment</button><a class="button secondary" href="${back}">Cancel</a></div></form>`;
}

/** The workspace's segments with how many contacts match each now (undefined: not known). */
export function segmentListView(opts: { segments: Segment[]; counts: Array<number | undefined>; nextCursor?: string; canEdit: boolean }): Html {
  const rows = opts.segments.map((s, i) => html`<tr><td data-label="Segment"><a href="${consoleUrl(`/segments/${s.id}`)}">${s.name}</a></td>
<td data-label="Contacts" class="num">${opts.counts[i] ?? "—"}</td><td data-label="Updated">${updated(s)}</td></tr>`);
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl("/segments", { cursor: opts.nextCursor })}">More segments</a></p>` : "";
  return html`<h1>Segments</h1>
<p class="muted">A segment is a saved filter: whoever matches it at the moment you look (or send). Counts include every status; a broadcast to a segment reaches only its subscribed contacts.</p>
<div class="actions">${opts.canEdit ? html`<a class="button" href="${consoleUrl("/segments/new")}">New segment</a>` : ""}</div>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Segments</caption><thead><tr><th>Segment</th><th class="num">Contacts now</th><th>Updated</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No segments yet.</p>`}`;
}

/** One segment: its count, filter, a page of its contacts, and edit and delete for an editor. */
export function segmentView(opts: { segment: Segment; count: number; contacts: Contact[]; nextCursor?: string; canEdit: boolean; csrf: string }): Html {
  const { segment: s, count: n } = opts;
  const rows = opts.contacts.map((c) => html`<tr><td data-label="Contact"><a href="${consoleUrl(`/contacts/${c.id}`)}">${c.email}</a></td>
<td data-label="Name">${[c.firstName, c.lastName].filter(Boolean).join(" ") || "—"}</td>
<td data-label="Status">${trusted(statusBadge((ContactStatus[c.status] ?? "UNKNOWN").replace(/_/g, " ").toLowerCase(), c.status === ContactStatus.SUBSCRIBED ? "ok" : "warn"))}</td></tr>`);
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl(`/segments/${s.id}`, { cursor: opts.nextCursor })}">More contacts</a></p>` : "";
  return html`<h1>${s.name}</h1>
<p class="muted">id <code>${s.id}</code> · updated ${updated(s)}</p>
<p style="font-size:1.1rem"><strong id="segment-count">${n}</strong> ${n === 1 ? "contact matches" : "contacts match"} now.</p>
<details class="card"><summary>Filter</summary><pre>${prettyFilter(s.filterJson)}</pre></details>
${opts.canEdit ? html`<div class="actions"><a class="button secondary" href="${consoleUrl(`/segments/${s.id}/edit`)}">Edit segment</a>
<form method="post" action="${consoleUrl(`/segments/${s.id}/delete`)}" data-confirm="Delete the segment ${s.name}? Its contacts stay.">${trusted(opts.csrf)}<button type="submit" class="danger">Delete segment</button></form></div>` : ""}
<h2 id="contacts-h">Contacts</h2>
${rows.length ? html`<div class="table-wrap"><table class="data stack" aria-labelledby="contacts-h"><thead><tr><th>Contact</th><th>Name</th><th>Status</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No contact matches this segment now.</p>`}
<p><a href="${consoleUrl("/segments")}">Back to segments</a></p>`;
}
