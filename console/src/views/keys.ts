/**
 * The API keys page (/console/keys): the views. The handlers are pages/keys.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ApiKey } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { Member } from "@mailroom/proto/accounts/v1/team_pb.js";
import { API_KEY_NAME_MAX } from "@mailroom/http/api-keys-schema.js";
import type { Role } from "@mailroom/http/roles.js";
import { consoleUrl } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, field, time } from "./page-parts.js";

/** What the create form holds (typed back after a refusal). */
export interface KeyFormValues {
  name: string;
  role: Role;
  owner: string;
}

const ROLE_WORDS: Record<string, string> = {
  ADMIN: "changes and sends, and reads the audit log (needs an owner who is OWNER or ADMIN)",
  EDITOR: "reads, changes and sends",
  VIEWER: "reads only",
};

/** One key as the list shows it; the handler works out its role and whether it may be revoked. */
export interface KeyRow {
  key: ApiKey;
  role: Role;
  /** The owner member, when it still is one. */
  owner?: Member;
  /** The session signed in with this key. */
  current: boolean;
  revocable: boolean;
}

function keyRow(r: KeyRow, csrf: Html, manage: boolean): Html {
  const k = r.key;
  const ownerText = !k.ownerMemberId ? html`<span class="muted">none</span>`
    : r.owner ? html`${r.owner.email}` : html`${k.ownerMemberId} <span class="muted">(no longer a member: the key does not work)</span>`;
  const name = k.name ? html`${k.name}` : html`<span class="muted">(no name)</span>`;
  const you = r.current ? html` ${badge("This session", "info")}` : "";
  const status = k.revokedAt ? html`${badge("Revoked", "bad")} ${time(timestampDate(k.revokedAt))}` : badge("Active", "ok");
  const label = k.name || k.prefix;
  const revoke = manage
    ? html`<td data-label="Action">${r.revocable
      ? html`<form method="post" action="${consoleUrl(`/keys/${k.id}/revoke`)}" data-confirm="Revoke the key ${label}? Whatever uses it stops working at once; this cannot be undone.">${csrf}<button type="submit" class="danger small" aria-label="Revoke the key ${label}">Revoke</button></form>`
      : ""}</td>`
    : "";
  return html`<tr data-key="${k.id}"><td data-label="Name">${name}${you}<br><code>${k.prefix}…</code></td>
<td data-label="Role">${r.role}<br><span class="muted">${k.scopes.join(", ") || "no scope"}</span></td>
<td data-label="Owner">${ownerText}</td><td data-label="Created">${time(k.createdAt && timestampDate(k.createdAt))}</td>
<td data-label="Last used" data-last-used>${k.lastUsedAt ? time(timestampDate(k.lastUsedAt)) : html`<span class="muted">Never</span>`}</td>
<td data-label="Status">${status}</td>${revoke}</tr>`;
}

function createForm(csrf: Html, roles: Role[], members: Member[], values: KeyFormValues): Html {
  const roleOptions = roles.map((r) => html`<option value="${r}"${r === values.role ? html` selected` : ""}>${r}: ${ROLE_WORDS[r] ?? ""}</option>`);
  const active = members.filter((m) => m.status === "ACTIVE");
  const owners = [html`<option value=""${values.owner ? "" : html` selected`}>No owner</option>`, ...active.map((m) =>
    html`<option value="${m.id}"${m.id === values.owner ? html` selected` : ""}>${m.email} (${m.role})</option>`)];
  return html`<form method="post" action="${consoleUrl("/keys")}" class="card" id="create-key" aria-labelledby="create-h">${csrf}
<div class="grid"><div class="field"><label for="key-name">Name</label><input id="key-name" name="name" required maxlength="${API_KEY_NAME_MAX}" value="${values.name}" style="width:100%" placeholder="e.g. Production server" autocomplete="off"></div>
<div class="field"><label for="key-role">Role</label><select id="key-role" name="role" style="width:100%">${roleOptions}</select></div>
<div class="field"><label for="key-owner">Owner</label><select id="key-owner" name="owner" style="width:100%" aria-describedby="key-owner-h">${owners}</select>
<p class="muted" id="key-owner-h" style="margin:.25rem 0 0">A key never does more than its owner, and stops working when the owner leaves.</p></div></div>
<div class="actions"><button type="submit">Create key</button></div></form>`;
}

export interface KeyListData {
  /** In the order shown (active first, newest first). */
  rows: KeyRow[];
  members: Member[];
  /** The create form and revoke buttons: for owners and admins. */
  manage: boolean;
  /** The roles the create form offers. */
  roles: Role[];
  values: KeyFormValues;
  csrf: string;
}

/** The list and, for those who manage keys, the create form. */
export function keyListView(d: KeyListData): Html {
  const csrf = field(d.csrf);
  const rows = d.rows.map((r) => keyRow(r, csrf, d.manage));
  const form = d.manage
    ? html`<h2 id="create-h">Create a key</h2>${createForm(csrf, d.roles, d.members, d.values)}
<p class="muted">The key is shown once, on the page that answers; only its start is kept readable.</p>`
    : html`<p class="muted">Only owners and admins create and revoke keys.</p>`;
  return html`<h1>API keys</h1>
<p class="muted">Keys of this workspace for the <code>/v1</code> API. Only their start is shown. "Last used" is to the minute.</p>
${rows.length ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">API keys, active first</caption>
<thead><tr><th>Name</th><th>Role and scopes</th><th>Owner</th><th>Created</th><th>Last used</th><th>Status</th>${d.manage ? html`<th>Action</th>` : ""}</tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="muted">No API keys yet.</p>`}
${form}`;
}

/** The answer to a created key: its secret, shown this once. */
export function keyCreatedView(key: ApiKey, role: Role, secret: string): Html {
  return html`<h1>API key created</h1>
<p>The key <strong>${key.name}</strong> (${role}) is ready.</p>
<div class="card" role="status"><label for="key-secret">The key (shown only now: store it somewhere safe)</label>
<code class="value" id="key-secret">${secret}</code>
<div class="actions"><button type="button" class="secondary small" data-copy="${secret}" hidden>Copy</button></div>
<p class="muted">Send it as <code>Authorization: Bearer &lt;key&gt;</code>. Mailroom keeps only a hash: if it is lost, revoke it and create another.</p></div>
<p><a href="${consoleUrl("/keys")}">Back to API keys</a></p>`;
}

