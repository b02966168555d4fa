/**
 * Groups (/console/groups): the views. The handlers are pages/groups.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ContactStatus, type Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Group, GroupMember } from "@mailroom/proto/audience/v1/groups_pb.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import { groupLabel } from "../groups.js";
import { html, trusted, type Html } from "./html.js";

export interface NewGroupValues {
  publicId: string;
  displayName: string;
}

const statusText = (s: ContactStatus) => (ContactStatus[s] ?? "UNKNOWN").replace(/_/g, " ").toLowerCase();
const created = (g: Group) => trusted(formatTime(g.createdAt && timestampDate(g.createdAt)));

/** The list with member counts (undefined: not known) and, for an editor, the create form; `csrf` is the hidden input. */
export function groupListView(opts: {
  groups: Group[]; counts: Array<number | undefined>; nextCursor?: string; canEdit: boolean; csrf: string; values: NewGroupValues;
}): Html {
  const { groups, counts, values } = opts;
  const rows = groups.map((g, i) => html`<tr><td data-label="Group"><a href="${consoleUrl(`/groups/${g.id}`)}">${groupLabel(g)}</a></td>
<td data-label="Public id"><code>${g.publicId}</code></td>
<td data-label="Contacts" class="num" data-members>${counts[i] ?? "—"}</td>
<td data-label="Created">${created(g)}</td></tr>`);
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl("/groups", { cursor: opts.nextCursor })}">More groups</a></p>` : "";
  return html`<h1>Groups</h1>
<p class="muted">Groups are lists you put contacts in (by hand, through the API, or with a signup form). Send a broadcast to one or more groups, or use them in segment filters.</p>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Groups</caption><thead><tr><th>Group</th><th>Public id</th><th class="num">Contacts</th><th>Created</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No groups yet.</p>`}
${opts.canEdit ? html`<h2 id="new">New group</h2>
<form method="post" action="${consoleUrl("/groups")}" class="card">${trusted(opts.csrf)}
<div class="grid"><div class="field"><label for="publicId">Public id</label><p class="muted" id="publicId-h" style="margin:0 0 .25rem">Unique in the workspace; what the API and filters may call it (e.g. <code>newsletter</code>).</p>
<input id="publicId" name="publicId" required maxlength="200" value="${values.publicId}" aria-describedby="publicId-h" style="width:100%"></div>
<div class="field"><label for="displayName">Display name (optional)</label><input id="displayName" name="displayName" maxlength="200" value="${values.displayName}" style="width:100%"></div></div>
<div class="actions"><button type="submit">Create group</button></div></form>` : ""}`;
}

/** One member row's data: the contact when it could be read. */
export interface GroupMemberRow {
  member: GroupMember;
  contact?: Contact;
}

function memberRow(base: string, row: GroupMemberRow, canEdit: boolean, csrf: Html): Html {
  const { member: m, contact: c } = row;
  const name = c ? [c.firstName, c.lastName].filter(Boolean).join(" ") : "";
  return html`<tr><td data-label="Contact">${c ? html`<a href="${consoleUrl(`/contacts/${c.id}`)}">${c.email}</a>` : html`<code>${m.contactId}</code>`}${name ? html`<br><span class="muted">${name}</span>` : ""}</td>
<td data-label="Status">${c ? trusted(statusBadge(statusText(c.status), c.status === ContactStatus.SUBSCRIBED ? "ok" : "warn")) : "—"}</td>
<td data-label="Added">${trusted(formatTime(m.addedAt && timestampDate(m.addedAt)))}</td>
<td data-label="Action">${canEdit ? html`<form method="post" action="${base}/contacts/${m.contactId}/remove">${csrf}<button type="submit" class="secondary small" aria-label="Remove ${c?.email ?? m.contactId} from the group">Remove</button></form>` : ""}</td></tr>`;
}

/** One group: its count, the add and rename forms, a page of members, and delete. */
export function groupView(opts: {
  group: Group; count?: number; members: GroupMemberRow[]; nextCursor?: string; canEdit: boolean; csrf: string;
}): Html {
  const { group: g, count, canEdit } = opts;
  const csrf = trusted(opts.csrf);
  const base = consoleUrl(`/groups/${g.id}`);
  const rows = opts.members.map((row) => memberRow(base, row, canEdit, csrf));
  const more = opts.nextCursor ? html`<p><a href="${consoleUrl(`/groups/${g.id}`, { cursor: opts.nextCursor })}">More contacts</a></p>` : "";
  return html`<h1>${groupLabel(g)}</h1>
<p class="muted">Public id <code>${g.publicId}</code> · id <code>${g.id}</code> · created ${created(g)}</p>
<p><strong id="member-count">${count ?? "—"}</strong> ${count === 1 ? "contact" : "contacts"} in this group.</p>
${canEdit ? html`<div class="grid">
<form method="post" action="${base}/contacts" class="card">${csrf}<div class="field"><label for="add-email">Add a contact (email)</label>
<input id="add-email" name="email" type="email" required style="width:100%" placeholder="someone@example.com"></div>
<div class="actions" style="margin:.25rem 0 0"><button type="submit">Add to group</button></div></form>
<form method="post" action="${base}" class="card">${csrf}<div class="field"><label for="rename">Display name</label>
<input id="rename" name="displayName" maxlength="200" value="${g.displayName}" style="width:100%"></div>
<div class="actions" style="margin:.25rem 0 0"><button type="submit" class="secondary">Rename</button></div></form></div>` : ""}
<h2 id="members-h">Contacts</h2>
${rows.length ? html`<div class="table-wrap"><table class="data stack" aria-labelledby="members-h"><thead><tr><th>Contact</th><th>Status</th><th>Added</th><th>Action</th></tr></thead><tbody>${rows}</tbody></table></div>${more}`
    : html`<p class="muted">No contacts in this group yet.</p>`}
${canEdit ? html`<h2>Delete</h2><form method="post" action="${base}/delete" data-confirm="Delete the group ${groupLabel(g)}? Its contacts stay, outside the group.">${csrf}
<p class="muted">The contacts are not deleted; they just leave the group. Broadcasts and segments naming it will not find it.</p><button type="submit" class="danger">Delete group</button></form>` : ""}
<p><a href="${consoleUrl("/groups")}">Back to groups</a></p>`;
}
