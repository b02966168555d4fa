/**
 * The Team page (/console/team) and the invitation link's page: the views. The handlers are
 * pages/team.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Member } from "@mailroom/proto/accounts/v1/team_pb.js";
import type { Role } from "@mailroom/http/roles.js";
import { CONSOLE_PREFIX, consoleUrl } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, field, time } from "./page-parts.js";

/** A role picker; `label` names it for assistive technology when no <label> does. */
function roleSelect(id: string, roles: readonly Role[], selected: Role, label?: string): Html {
  return html`<select id="${id}" name="role"${label ? html` aria-label="${label}"` : ""}>${roles.map((r) =>
    html`<option value="${r}"${r === selected ? html` selected` : ""}>${r}</option>`)}</select>`;
}

/** One member as the list shows it; the handler works out what the session may do to them. */
export interface MemberRow {
  member: Member;
  role: Role;
  you: boolean;
  /** The session may change this member's role and remove them. */
  manageable: boolean;
}

function memberRow(r: MemberRow, csrf: Html, manage: boolean, grantable: readonly Role[]): Html {
  const m = r.member;
  const status = m.status === "ACTIVE" ? badge("Active", "ok") : badge("Invited", "info");
  const you = r.you ? html` ${badge("You", "info")}` : "";
  const actions = manage && r.manageable
    ? html`<td data-label="Actions"><div class="row" style="gap:.25rem">
<form method="post" action="${consoleUrl(`/team/${m.id}/role`)}" class="row" style="gap:.25rem">${csrf}${roleSelect(`role-${m.id}`, grantable, r.role, `Role of ${m.email}`)}<button type="submit" class="secondary small" aria-label="Change the role of ${m.email}">Change role</button></form>
<form method="post" action="${consoleUrl(`/team/${m.id}/remove`)}" data-confirm="Remove ${m.email}? They are signed out at once.">${csrf}<button type="submit" class="danger small" aria-label="Remove ${m.email}">Remove</button></form>
</div></td>`
    : manage ? html`<td data-label="Actions"></td>` : "";
  return html`<tr><td data-label="Member">${m.email}${you}</td><td data-label="Role" style="white-space:nowrap">${r.role}</td><td data-label="Status">${status}</td>
<td data-label="Since">${time(m.createdAt ? timestampDate(m.createdAt) : undefined)}</td>
<td data-label="Last sign-in">${time(m.lastSignInAt ? timestampDate(m.lastSignInAt) : undefined)}</td>${actions}</tr>`;
}

export interface TeamPageData {
  rows: MemberRow[];
  /** Owners and admins invite, change roles and remove. */
  manage: boolean;
  /** The roles the session may hand out, highest first. */
  grantable: readonly Role[];
  csrf: string;
  /** A system sender mails invitations. */
  mails: boolean;
}

export function teamView(d: TeamPageData): Html {
  const csrf = field(d.csrf);
  const rows = d.rows.map((r) => memberRow(r, csrf, d.manage, d.grantable));
  const invite = d.manage ? html`<h2 id="invite-h">Invite a member</h2>
<form method="post" action="${consoleUrl("/team/invite")}" class="card row" aria-labelledby="invite-h">${csrf}
<div class="field"><label for="invite-email">Email address</label><input id="invite-email" name="email" type="email" required autocomplete="off" spellcheck="false"></div>
<div class="field"><label for="invite-role">Role</label>${roleSelect("invite-role", d.grantable, "EDITOR")}</div>
<div class="field"><button type="submit">Send invitation</button></div></form>
<p class="muted">${d.mails ? "The invitation is emailed; its link is also shown to you once." : "No system sender is configured (MAILROOM_SYSTEM_FROM): pass the link shown after inviting yourself."} It works once, within 72 hours.</p>`
    : html`<p class="muted">Only owners and admins invite, change roles and remove members.</p>`;
  return html`<h1>Team</h1>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">Members of the workspace</caption>
<thead><tr><th>Member</th><th>Role</th><th>Status</th><th>Since</th><th>Last sign-in</th>${d.manage ? html`<th>Actions</th>` : ""}</tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="6">No members yet.</td></tr>`}</tbody></table></div>
${invite}
<h2>Roles</h2><ul><li><strong>OWNER</strong>: everything, including owners.</li><li><strong>ADMIN</strong>: everything but owners: members, keys, domains, the audit log, the Delivery page.</li>
<li><strong>EDITOR</strong>: sends and changes content, contacts and broadcasts.</li><li><strong>VIEWER</strong>: looks only.</li></ul>`;
}

/** The answer to an invitation: the link, shown this once. `expires` is a date, or undefined for "in 72 hours". */
export function invitedView(email: string, role: Role, mailed: boolean, url: string, expires: Date | undefined): Html {
  return html`<h1>Invitation ${mailed ? "sent" : "created"}</h1>
<p>${email} is invited as <strong>${role}</strong>.${mailed ? " The invitation is on its way by email." : " No email was sent: pass on the link below."}</p>
<div class="card"><label for="invite-link">Invitation link (shown only now; it works once, until ${expires ? time(expires) : "in 72 hours"})</label>
<code class="value" id="invite-link">${url}</code>
<div class="actions"><button type="button" class="secondary small" data-copy="${url}" hidden>Copy</button></div></div>
<p><a href="${consoleUrl("/team")}">Back to the team</a></p>`;
}

/** The invitation link's page: a button to accept (mail scanners fetch links, and only GET). */
export function invitationView(token: string, csrf: string): Html {
  return html`<h1>Join a workspace</h1>
<p>You were invited to a workspace in the Mailroom console. Accept to join it and sign in.</p>
<form method="post" action="${CONSOLE_PREFIX}/invite/${encodeURIComponent(token)}" class="card">
${field(csrf)}<button type="submit">Accept the invitation</button></form>`;
}
