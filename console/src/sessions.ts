/**
 * My sessions (/console/sessions): the signed-in member's console sessions (where, when, how),
 * each revocable, and "Sign out everywhere" (every session of the member, this one included).
 * A key session has no member sessions to list.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { CONSOLE_PREFIX, consolePage, consoleUrl, escapeHtml, formatTime, statusBadge } from "./layout.js";
import { seeOther, sessionOf, setFlash } from "./session.js";
import type { ConsoleSession } from "./types.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;
const METHODS: Record<string, string> = { magic_link: "Email link", oidc: "OpenID Connect" };

function memberOnly(session: ConsoleSession): { memberId: string; sessionId: string } {
  if (session.kind !== "member" || !session.memberId || !session.sessionId) {
    throw refusal({ code: "forbidden", status: 403, message: "This console session uses an API key; sessions belong to members." });
  }
  return { memberId: session.memberId, sessionId: session.sessionId };
}

export function registerSessionPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/sessions", async (request, reply) => {
    const session = sessionOf(request);
    let body: string;
    if (session.kind !== "member" || !session.memberId) {
      body = `<h1>Sessions</h1><p>You signed in with the API key <strong>${escapeHtml(session.keyName || session.keyId)}</strong> (role ${session.role}). Sessions belong to members, who sign in by email link or OpenID Connect.</p>`;
    } else {
      const { sessions } = await deps.clients.team.listSessions({
        workspaceId: session.workspaceId, memberId: session.memberId, currentSessionId: session.sessionId ?? "",
      }, rpcOptions(request));
      const csrf = csrfField(session);
      const rows = sessions.map((s) => {
        const current = s.current || s.id === session.sessionId;
        return `<tr><td data-label="Signed in">${formatTime(s.createdAt ? timestampDate(s.createdAt) : undefined)}${current ? ` ${statusBadge("This browser", "info")}` : ""}</td>
<td data-label="Last seen">${formatTime(s.lastSeenAt ? timestampDate(s.lastSeenAt) : undefined)}</td>
<td data-label="How">${escapeHtml(METHODS[s.method] ?? s.method)}</td>
<td data-label="Browser">${escapeHtml(s.userAgent || "—")}</td><td data-label="Address">${escapeHtml(s.ip || "—")}</td>
<td data-label="Action"><form method="post" action="${consoleUrl(`/sessions/${s.id}/revoke`)}">${csrf}<button type="submit" class="secondary small" aria-label="Sign out the session from ${escapeHtml(s.userAgent || s.id)}">${current ? "Sign out" : "Revoke"}</button></form></td></tr>`;
      }).join("");
      body = `<h1>Sessions</h1>
<p>Signed in as <strong>${escapeHtml(session.memberEmail ?? "")}</strong> (${session.role}).</p>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">Your console sessions, newest first</caption>
<thead><tr><th>Signed in</th><th>Last seen</th><th>How</th><th>Browser</th><th>Address</th><th>Action</th></tr></thead>
<tbody>${rows || `<tr><td colspan="6">No sessions.</td></tr>`}</tbody></table></div>
<form method="post" action="${consoleUrl("/sessions/revoke-all")}" class="actions" data-confirm="Sign out of every browser, this one included?">${csrf}
<button type="submit" class="danger">Sign out everywhere</button></form>`;
    }
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Sessions", session, active: "sessions", body, flash: request.consoleFlash }));
  });

  scope.post("/sessions/:sessionId/revoke", async (request, reply) => {
    const session = sessionOf(request);
    const me = memberOnly(session);
    const { sessionId } = request.params as { sessionId: string };
    const opts = rpcOptions(request);
    // RevokeSession takes any session of the workspace: only the member's own are theirs to end.
    const { sessions } = await deps.clients.team.listSessions({ workspaceId: session.workspaceId, memberId: me.memberId, currentSessionId: me.sessionId }, opts);
    if (!SESSION_ID.test(sessionId) || !sessions.some((s) => s.id === sessionId)) throw refusal({ code: "not_found", status: 404, message: "No such session of yours." });
    await deps.clients.team.revokeSession({ workspaceId: session.workspaceId, sessionId }, opts);
    deps.sessions.forget({ sessionId });
    if (sessionId === me.sessionId) {
      deps.sessions.end(reply);
      setFlash(reply, { kind: "ok", message: "You are signed out." });
      return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
    }
    setFlash(reply, { kind: "ok", message: "That session is signed out." });
    return seeOther(reply, consoleUrl("/sessions"));
  });

  scope.post("/sessions/revoke-all", async (request, reply) => {
    const session = sessionOf(request);
    const me = memberOnly(session);
    const { revoked } = await deps.clients.team.revokeAllSessions({ workspaceId: session.workspaceId, memberId: me.memberId }, rpcOptions(request));
    deps.sessions.forget({ memberId: me.memberId });
    deps.sessions.end(reply);
    setFlash(reply, { kind: "ok", message: `You are signed out everywhere (${revoked} session${revoked === 1 ? "" : "s"}).` });
    return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
  });
}
