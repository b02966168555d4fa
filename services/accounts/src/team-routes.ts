import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AuditEntrySchema, MemberSchema, SessionSchema, TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import type { AuditLog, AuditLogEntry } from "./domain/audit-log.js";
import type { Member } from "@mailroom/records/model.js";
import { isActive, roleOfMember, type Session, type Team } from "./domain/team.js";

/** Proto ⇄ domain mapping of TeamService; every rule lives in domain/team.ts and domain/audit-log.ts. */

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);
const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

export function memberToPb(m: Member): MessageInitShape<typeof MemberSchema> {
  return {
    id: m.publicId ?? "",
    workspaceId: m.workspaceId,
    email: m.email,
    role: roleOfMember(m),
    status: isActive(m) ? "ACTIVE" : "INVITED",
    createdAt: ts(m.createdAt),
    lastSignInAt: ts(m.lastSignInAt),
    invitedBy: m.invitedBy ?? "",
    oidcIssuer: m.oidcIssuer ?? "",
  };
}

export function sessionToPb(s: Session, currentId = ""): MessageInitShape<typeof SessionSchema> {
  return {
    id: s._id,
    workspaceId: s.workspaceId,
    memberId: s.memberId,
    createdAt: ts(s.createdAt),
    lastSeenAt: ts(s.lastSeenAt),
    expiresAt: ts(s.expiresAt),
    userAgent: s.userAgent,
    ip: s.ip,
    method: s.method,
    current: !!currentId && s._id === currentId,
  };
}

export function auditEntryToPb(e: AuditLogEntry): MessageInitShape<typeof AuditEntrySchema> {
  return {
    id: e._id,
    workspaceId: e.workspaceId,
    at: ts(e.at),
    actor: e.actor,
    action: e.action,
    resource: e.resource,
    requestId: e.requestId,
    summary: e.summary,
  };
}

export function teamService(team: Team, auditLog: AuditLog): ServiceImpl<typeof TeamService> {
  return {
    async inviteMember(req) {
      const r = await team.invite({ workspaceId: req.workspaceId, email: req.email, role: req.role, invitedBy: req.invitedBy, actingRole: req.actingRole });
      return { invitationId: r.invitationId, token: r.token, expiresAt: ts(r.expiresAt), member: memberToPb(r.member) };
    },
    async acceptInvitation(req) {
      const member = await team.acceptInvitation(req.token);
      return { member: memberToPb(member), workspaceId: member.workspaceId };
    },
    async listMembers(req) {
      return { members: (await team.list(req.workspaceId)).map((m) => memberToPb(m)) };
    },
    async updateMemberRole(req) {
      return { member: memberToPb(await team.updateRole(req.workspaceId, req.memberId, req.role, req.actingRole)) };
    },
    async removeTeamMember(req) {
      return { member: memberToPb(await team.remove(req.workspaceId, req.memberId, req.actingRole)) };
    },
    async startMagicLink(req) {
      const r = await team.startMagicLink(req.email, req.workspaceId);
      return { token: r.token, memberEmail: r.email, workspaceIds: r.workspaceIds, expiresAt: ts(r.expiresAt), workspaceId: r.workspaceId };
    },
    async redeemMagicLink(req) {
      const r = await team.redeemMagicLink(req.token, { userAgent: req.userAgent, ip: req.ip });
      return { session: sessionToPb(r.session), sessionToken: r.token };
    },
    async signInWithOidc(req) {
      const r = await team.signInWithOidc({ email: req.email, issuer: req.issuer, subject: req.subject, userAgent: req.userAgent, ip: req.ip, workspaceId: req.workspaceId });
      return { session: sessionToPb(r.session), sessionToken: r.token };
    },
    async getSession(req) {
      const r = await team.getSession(req.sessionToken);
      return { session: sessionToPb(r.session), member: memberToPb(r.member), workspaceId: r.session.workspaceId, rotatedToken: r.rotatedToken };
    },
    async listSessions(req) {
      return { sessions: (await team.listSessions(req.workspaceId, req.memberId)).map((s) => sessionToPb(s, req.currentSessionId)) };
    },
    async revokeSession(req) {
      await team.revokeSession(req.workspaceId, req.sessionId);
      return {};
    },
    async revokeAllSessions(req) {
      return { revoked: await team.revokeAllSessions(req.workspaceId, req.memberId) };
    },
    async listAuditLog(req) {
      const page = await auditLog.list({
        workspaceId: req.workspaceId,
        since: dateOf(req.since),
        until: dateOf(req.until),
        actor: req.actor,
        resource: req.resource,
        pageToken: req.pageToken,
        limit: req.limit,
      });
      return { entries: page.entries.map(auditEntryToPb), nextPageToken: page.nextPageToken };
    },
  };
}

export function teamRoutes(team: Team, auditLog: AuditLog) {
  return (router: ConnectRouter) => {
    router.service(TeamService, teamService(team, auditLog));
  };
}
