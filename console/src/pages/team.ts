/**
 * The Team page (/console/team): the workspace's members with roles and status. Owners and
 * admins invite (the invitation is mailed from the system sender, and its link shown once to
 * the inviter), change roles and remove members; everyone else sees the list. The team
 * refuses a role above the acting one and the last owner's demotion or removal, whatever
 * the page offers.
 *
 * The invitation link (/console/invite/<token>, no session needed): GET shows a button (mail
 * scanners fetch links), POST accepts the invitation and signs the new member in. The markup
 * is views/team.ts. No /v1 route invites a member: the invite form's checks are the console's own.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import type { ConsoleDeps } from "../deps.js";
import { anonymousCsrfField, csrfField, PRESESSION_COOKIE } from "../csrf.js";
import { CONSOLE_PREFIX, consolePage, consoleUrl, plainPage } from "../layout.js";
import { cookieOptions, roleOf, seeOther, sessionOf, setFlash } from "../session.js";
import type { ConsoleSession } from "../types.js";
import { ROLES, atLeast } from "@mailroom/http/roles.js";
import { linkRefusal } from "../link-refusal.js";
import { render } from "../views/html.js";
import { invitationView, invitedView, teamView } from "../views/team.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { refusal } from "@mailroom/http/errors.js";

const EMAIL_SHAPE = /^[^\s@<>",;]{1,64}@[^\s@<>",;]{1,253}$/;
const MEMBER_ID = /^[A-Za-z0-9_-]{1,64}$/;
const TOKEN_SHAPE = /^[A-Za-z0-9_\-.~]{16,1024}$/;

/** Owners and admins manage the team. */
export const managesTeam = (session: ConsoleSession) => atLeast(session.role, "ADMIN");

function requireManager(session: ConsoleSession): void {
  if (!managesTeam(session)) throw refusal({ code: "forbidden", status: 403, message: "Only owners and admins manage the team." });
}

/** Roles the session may hand out: its own and below. */
const grantable = (session: ConsoleSession) => [...ROLES].reverse().filter((r) => atLeast(session.role, r));

/** A refusal of the team (last owner, role above yours, exists) as a flash message, or rethrown. */
function teamMessage(err: unknown): string | undefined {
  const code = errorInfoOf(err)?.code ?? "";
  const messages: Record<string, string> = {
    last_owner: "A workspace keeps at least one owner: make someone else owner first.",
    role_above_caller: "You cannot give or change a role above your own.",
    member_exists: "That address is already a member.",
    member_not_found: "That member no longer exists.",
    invalid_role: "Choose one of the roles.",
  };
  return messages[code];
}

const html = (reply: FastifyReply) => reply.type("text/html; charset=utf-8");

export function registerTeamPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/team", async (request, reply) => {
    const session = sessionOf(request);
    const { members } = await deps.clients.team.listMembers({ workspaceId: session.workspaceId }, rpcOptions(request));
    const manage = managesTeam(session);
    const body = teamView({
      rows: members.map((m) => {
        const role = roleOf(m.role) ?? "VIEWER";
        return { member: m, role, you: m.id === session.memberId, manageable: atLeast(session.role, role) };
      }),
      manage, grantable: grantable(session), csrf: csrfField(session), mails: deps.mail.sends,
    });
    return html(reply).send(consolePage({ title: "Team", session, active: "team", body: render(body), flash: request.consoleFlash }));
  });

  scope.post("/team/invite", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const form = (request.body ?? {}) as Record<string, unknown>;
    const email = typeof form.email === "string" ? form.email.trim().toLowerCase() : "";
    const role = roleOf(typeof form.role === "string" ? form.role : undefined);
    if (!EMAIL_SHAPE.test(email)) {
      setFlash(reply, { kind: "error", message: "Enter the email address to invite." });
      return seeOther(reply, consoleUrl("/team"));
    }
    if (!role) {
      setFlash(reply, { kind: "error", message: "Choose one of the roles." });
      return seeOther(reply, consoleUrl("/team"));
    }
    let invited;
    try {
      invited = await deps.clients.team.inviteMember({
        workspaceId: session.workspaceId, email, role, invitedBy: session.actor, actingRole: session.role,
      }, rpcOptions(request));
    } catch (err) {
      const message = teamMessage(err);
      if (!message) throw err;
      setFlash(reply, { kind: "error", message });
      return seeOther(reply, consoleUrl("/team"));
    }
    const url = `${deps.config.publicUrl}${CONSOLE_PREFIX}/invite/${invited.token}`;
    const inviter = session.memberEmail ?? (session.keyName ? `The API key ${session.keyName}` : "An administrator");
    const mailed = await deps.mail.invitation(request, email, url, session.workspaceName, inviter);
    const body = invitedView(email, role, mailed, url, invited.expiresAt ? timestampDate(invited.expiresAt) : undefined);
    return html(reply).send(consolePage({ title: "Invitation", session, active: "team", body: render(body) }));
  });

  scope.post("/team/:memberId/role", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const { memberId } = request.params as { memberId: string };
    const role = roleOf(String((request.body as Record<string, unknown> | undefined)?.role ?? ""));
    if (!MEMBER_ID.test(memberId)) throw refusal({ code: "not_found", status: 404, message: "No such member." });
    if (!role) throw refusal({ code: "invalid_request", status: 400, message: "Choose one of the roles." });
    try {
      const { member } = await deps.clients.team.updateMemberRole({ workspaceId: session.workspaceId, memberId, role, actingRole: session.role }, rpcOptions(request));
      // The member's open sessions see the new role within the session cache's few seconds.
      setFlash(reply, { kind: "ok", message: `${member?.email ?? memberId} is now ${role}.` });
    } catch (err) {
      const message = teamMessage(err);
      if (!message) throw err;
      setFlash(reply, { kind: "error", message });
    }
    return seeOther(reply, consoleUrl("/team"));
  });

  scope.post("/team/:memberId/remove", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const { memberId } = request.params as { memberId: string };
    if (!MEMBER_ID.test(memberId)) throw refusal({ code: "not_found", status: 404, message: "No such member." });
    let removed = false;
    try {
      await deps.clients.team.removeTeamMember({ workspaceId: session.workspaceId, memberId, actingRole: session.role }, rpcOptions(request));
      removed = true;
      deps.sessions.forget({ memberId });
      setFlash(reply, { kind: "ok", message: "The member was removed and signed out." });
    } catch (err) {
      const message = teamMessage(err);
      if (!message) throw err;
      setFlash(reply, { kind: "error", message });
    }
    // Who removed themselves is signed out; who was refused (the last owner) stays, to read why.
    if (removed && memberId === session.memberId) {
      deps.sessions.end(reply);
      return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
    }
    return seeOther(reply, consoleUrl("/team"));
  });
}

/** The invitation link: outside the signed-in pages (the invitee has no session yet). */
export function registerInvitationPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/invite/:token", async (request: FastifyRequest, reply) => {
    const { token } = request.params as { token: string };
    const body = invitationView(token, anonymousCsrfField(request, reply, deps));
    return html(reply).send(plainPage({ title: "Invitation", body: render(body) }));
  });

  scope.post("/invite/:token", async (request, reply) => {
    const { token } = request.params as { token: string };
    deps.failures?.attempt(request.ip, reply);
    if (!TOKEN_SHAPE.test(token)) throw refusal({ code: "unauthorized", status: 401, message: "This invitation is not valid. Ask whoever invited you for a new one." });
    let accepted;
    try {
      accepted = await deps.clients.team.acceptInvitation({ token }, rpcOptions(request));
    } catch (err) {
      throw linkRefusal(err, "invitation_invalid");
    }
    deps.failures?.refund(request.ip);
    // Holding the invitation proves the address, as a magic link does: sign the member in with one.
    const opts = rpcOptions(request);
    const started = await deps.clients.team.startMagicLink({ email: accepted.member?.email ?? "", workspaceId: accepted.workspaceId }, opts);
    if (!started.token) {
      setFlash(reply, { kind: "ok", message: "You joined the workspace. Sign in to continue." });
      return seeOther(reply, `${CONSOLE_PREFIX}/sign-in`);
    }
    const redeemed = await deps.clients.team.redeemMagicLink({
      token: started.token, userAgent: String(request.headers["user-agent"] ?? "").slice(0, 256), ip: request.ip,
    }, opts);
    deps.sessions.startMember(reply, redeemed.sessionToken);
    reply.clearCookie(PRESESSION_COOKIE, cookieOptions(deps));
    setFlash(reply, { kind: "ok", message: "Welcome: you joined the workspace." });
    return seeOther(reply, CONSOLE_PREFIX);
  });
}
