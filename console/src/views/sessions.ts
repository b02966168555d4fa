/**
 * My sessions (/console/sessions): the views. The handler is pages/sessions.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Session as SessionRecord } from "@mailroom/proto/accounts/v1/team_pb.js";
import { consoleUrl, formatTime, statusBadge } from "../layout.js";
import type { ConsoleSession } from "../types.js";
import { html, trusted, type Html } from "./html.js";

const METHODS: Record<string, string> = { magic_link: "Email link", oidc: "OpenID Connect" };

/** A console session signed in with an API key: it has no member sessions. */
export function keySessionView(session: ConsoleSession): Html {
  return html`<h1>Sessions</h1><p>You signed in with the API key <strong>${session.keyName || session.keyId}</strong> (role ${session.role}). Sessions belong to members, who sign in by email link or OpenID Connect.</p>`;
}

/** The member's sessions, each revocable, and "Sign out everywhere"; `csrf` is the form's hidden input. */
export function memberSessionsView(session: ConsoleSession, sessions: SessionRecord[], csrf: string): Html {
  const csrfInput = trusted(csrf);
  const rows = sessions.map((s) => {
    const current = s.current || s.id === session.sessionId;
    return html`<tr><td data-label="Signed in">${trusted(formatTime(s.createdAt ? timestampDate(s.createdAt) : undefined))}${current ? html` ${trusted(statusBadge("This browser", "info"))}` : ""}</td>
<td data-label="Last seen">${trusted(formatTime(s.lastSeenAt ? timestampDate(s.lastSeenAt) : undefined))}</td>
<td data-label="How">${METHODS[s.method] ?? s.method}</td>
<td data-label="Browser">${s.userAgent || "—"}</td><td data-label="Address">${s.ip || "—"}</td>
<td data-label="Action"><form method="post" action="${consoleUrl(`/sessions/${s.id}/revoke`)}">${csrfInput}<button type="submit" class="secondary small" aria-label="Sign out the session from ${s.userAgent || s.id}">${current ? "Sign out" : "Revoke"}</button></form></td></tr>`;
  });
  return html`<h1>Sessions</h1>
<p>Signed in as <strong>${session.memberEmail ?? ""}</strong> (${session.role}).</p>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">Your console sessions, newest first</caption>
<thead><tr><th>Signed in</th><th>Last seen</th><th>How</th><th>Browser</th><th>Address</th><th>Action</th></tr></thead>
<tbody>${rows.length ? rows : html`<tr><td colspan="6">No sessions.</td></tr>`}</tbody></table></div>
<form method="post" action="${consoleUrl("/sessions/revoke-all")}" class="actions" data-confirm="Sign out of every browser, this one included?">${csrfInput}
<button type="submit" class="danger">Sign out everywhere</button></form>`;
}
