/**
 * My sessions (/console/sessions): the signed-in member's console sessions (where, when, how),
 * each revocable, and "Sign out everywhere" (every session of the member, this one included).
 * A key session has no member sessions to list. The markup is views/sessions.ts.
 */
import type { FastifyInstance } from "fastify";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { CONSOLE_PREFIX, consolePage, consoleUrl } from "../layout.js";
import { seeOther, sessionOf, setFlash } from "../session.js";
import type { ConsoleSession } from "../types.js";
import { render, type Html } from "../views/html.js";
import { keySessionView, memberSessionsView } from "../views/sessions.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

function memberOnly(session: ConsoleSession): { memberId: string; sessionId: string } {
  if (session.kind !== "member" || !session.memberId || !session.sessionId) {
    throw refusal({ code: "forbidden", status: 403, message: "This console session uses an API key; sessions belong to members." });
  }
  return { memberId: session.memberId, sessionId: session.sessionId };
}

export function registerSessionPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/sessions", async (request, reply) => {
    const session = sessionOf(request);
    let body: Html;
    if (session.kind !== "member" || !session.memberId) {
      body = keySessionView(session);
    } else {
      const { sessions } = await deps.clients.team.listSessions({
        workspaceId: session.workspaceId, memberId: session.memberId, currentSessionId: session.sessionId ?? "",
      }, rpcOptions(request));
      body = memberSessionsView(session, sessions, csrfField(session));
    }
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Sessions", session, active: "sessions", body: render(body), flash: request.consoleFlash }));
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
