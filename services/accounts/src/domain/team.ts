import { appError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { newId } from "@mailroom/kit/ids.js";
import type { SecretKeys } from "@mailroom/kit/secrets.js";
import { normalizeEmail } from "@mailroom/records/address.js";
import { MEMBER_ROLES, scopedId, type Member, type MemberRole } from "@mailroom/records/model.js";
import type { SessionRecord, SessionRepository, TeamMemberRepository, TeamToken, TeamTokenRepository } from "./team-ports.js";
import { hashTeamToken, newSessionToken, signTeamToken, verifyTeamToken } from "./team-tokens.js";
import { assertNotBanned, type Workspaces } from "./workspaces.js";
import { memberEvents } from "./changes.js";
import type { DirectoryEventPublisher } from "@mailroom/records/change-events.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** How long each credential lives (DESIGN §9.9). */
export const TEAM_LIFETIMES = {
  invitation: 72 * HOUR,
  magicLink: 15 * MINUTE,
  /** A session token older than this is replaced on its next use… */
  sessionRotation: HOUR,
  /** …and the replaced token keeps working this long (requests already in flight). */
  rotationGrace: 60_000,
  /** A session unused this long ends… */
  sessionIdle: 14 * DAY,
  /** …and none outlives this. */
  sessionMax: 30 * DAY,
  /** last_seen is written at most this often. */
  lastSeenResolution: MINUTE,
} as const;

/** OWNER 3 … VIEWER 0. */
export const roleRank = (role: MemberRole): number => MEMBER_ROLES.length - 1 - MEMBER_ROLES.indexOf(role);
export const lowerRole = (a: MemberRole, b: MemberRole): MemberRole => (roleRank(a) <= roleRank(b) ? a : b);

export function parseMemberRole(raw: unknown): MemberRole {
  if (typeof raw === "string" && (MEMBER_ROLES as readonly string[]).includes(raw.toUpperCase())) return raw.toUpperCase() as MemberRole;
  throw badRequest("invalid_role", `role ${JSON.stringify(raw)} is not one of ${MEMBER_ROLES.join(", ")}`);
}

/** A member's role and status; members stored before roles are ACTIVE EDITORs. */
export const roleOfMember = (m: Member): MemberRole => m.role ?? "EDITOR";
export const isActive = (m: Member): boolean => (m.status ?? "ACTIVE") === "ACTIVE";

const unauthenticated = (code: string, message: string) => appError({ code, httpStatus: 401, message });
const forbidden = (code: string, message: string) => appError({ code, httpStatus: 403, message });
const lastOwner = () =>
  appError({ code: "last_owner", httpStatus: 409, message: "A workspace keeps at least one owner: make another member OWNER first" });

export interface Session extends Omit<SessionRecord, "tokenHash" | "previousTokenHash" | "previousValidUntil" | "tokenIssuedAt"> {}

export interface SignIn {
  session: Session;
  /** The session token for the cookie (shown once). */
  token: string;
}

export interface TeamDeps {
  members: TeamMemberRepository;
  tokens: TeamTokenRepository;
  sessions: SessionRepository;
  workspaces: Workspaces;
  /** MAILROOM_SECRET (and _PREVIOUS): invitation and magic-link tokens are signed with it. */
  secrets: SecretKeys;
  now?: Clock;
  /** Announces team events (WORKSPACE_TEAM_MEMBER_JOINED when an invitation is accepted; webhooks). */
  publishChanges?: DirectoryEventPublisher;
}

const publicSession = (s: SessionRecord): Session => {
  const { tokenHash: _t, previousTokenHash: _p, previousValidUntil: _v, tokenIssuedAt: _i, ...rest } = s;
  return rest;
};

/**
 * The team (DESIGN §9.9): members with roles, invitations, console sign-in by magic link or
 * OpenID Connect, and rotating, revocable sessions. Every token is returned once and stored
 * hashed; invitations and magic links are signed, so a tampered one is refused unread.
 */
export class Team {
  private readonly now: Clock;

  constructor(private readonly d: TeamDeps) {
    this.now = d.now ?? systemClock;
  }

  private parseEmail(email: unknown): string {
    const e = typeof email === "string" ? normalizeEmail(email) : undefined;
    if (!e) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    return e;
  }

  /** A member by "mbr_…" id or by email. */
  async member(workspaceId: string, ref: string): Promise<Member> {
    requireWorkspaceId(workspaceId);
    const found =
      typeof ref === "string" && ref.includes("@")
        ? await this.d.members.findByEmail(workspaceId, this.parseEmail(ref))
        : typeof ref === "string" && ref
          ? await this.d.members.findByPublicId(workspaceId, ref)
          : null;
    if (!found) throw notFound("member_not_found", `Member ${String(ref).slice(0, 200)} not found`);
    return found;
  }

  /** A role the caller may grant or touch: never above its own (when it has one). */
  private checkActing(actingRole: string | undefined, ...roles: MemberRole[]): void {
    if (!actingRole) return;
    const acting = parseMemberRole(actingRole);
    const above = roles.find((r) => roleRank(r) > roleRank(acting));
    if (above) throw forbidden("role_above_caller", `A ${acting} cannot grant or change the role ${above}`);
  }

  async invite(input: { workspaceId: string; email: string; role: string; invitedBy?: string; actingRole?: string }): Promise<{ invitationId: string; token: string; expiresAt: Date; member: Member }> {
    await this.d.workspaces.get(input.workspaceId);
    const email = this.parseEmail(input.email);
    const role = parseMemberRole(input.role);
    this.checkActing(input.actingRole, role);
    const now = this.now();
    let member = await this.d.members.findByEmail(input.workspaceId, email);
    if (member && isActive(member)) throw conflict("member_exists", `${email} already is a member of this workspace`);
    if (member) {
      // A new invitation replaces the ones sent before.
      await this.d.tokens.removeForMember(input.workspaceId, member.publicId!);
      member = (await this.d.members.update(input.workspaceId, member.publicId!, { role, invitedBy: input.invitedBy ?? "" })) ?? member;
    } else {
      const fresh: Member = {
        _id: scopedId(input.workspaceId, email),
        workspaceId: input.workspaceId,
        email,
        createdAt: now,
        publicId: newId("mbr"),
        role,
        status: "INVITED",
        invitedBy: input.invitedBy ?? "",
        lastSignInAt: null,
      };
      if (!(await this.d.members.insert(fresh))) return this.invite(input); // invited at the same time: refresh that one
      member = fresh;
    }
    const token = signTeamToken(this.d.secrets, "inv");
    const record: TeamToken = {
      _id: newId("inv"),
      kind: "invitation",
      tokenHash: hashTeamToken(token),
      workspaceId: input.workspaceId,
      memberId: member.publicId!,
      email,
      role,
      createdAt: now,
      expiresAt: new Date(now.getTime() + TEAM_LIFETIMES.invitation),
      usedAt: null,
    };
    await this.d.tokens.insert(record);
    return { invitationId: record._id, token, expiresAt: record.expiresAt, member };
  }

  /** Checks a signed single-use token and spends it. */
  private async spend(kind: "invitation" | "magic_link", token: string): Promise<TeamToken> {
    const [prefix, label, code] = kind === "invitation" ? (["inv", "invitation", "invitation"] as const) : (["mlk", "magic link", "magic_link"] as const);
    if (!verifyTeamToken(this.d.secrets, prefix, token)) throw unauthenticated(`${code}_invalid`, `This ${label} is not valid`);
    const hash = hashTeamToken(token);
    const record = await this.d.tokens.findByHash(hash);
    if (!record || record.kind !== kind) throw unauthenticated(`${code}_invalid`, `This ${label} is not valid`);
    if (record.usedAt) throw unauthenticated(`${code}_used`, `This ${label} was used already`);
    if (record.expiresAt.getTime() <= this.now().getTime()) throw unauthenticated(`${code}_expired`, `This ${label} has expired`);
    if (!(await this.d.tokens.markUsed(hash, this.now()))) throw unauthenticated(`${code}_used`, `This ${label} was used already`);
    return record;
  }

  async acceptInvitation(token: string): Promise<Member> {
    const invitation = await this.spend("invitation", token);
    const member = await this.d.members.findByPublicId(invitation.workspaceId, invitation.memberId);
    // Removed since the invitation was sent: the invitation went with the member.
    if (!member) throw unauthenticated("invitation_invalid", "This invitation is not valid");
    const updated = await this.d.members.update(invitation.workspaceId, invitation.memberId, { status: "ACTIVE", role: invitation.role ?? roleOfMember(member) });
    if (!updated) throw unauthenticated("invitation_invalid", "This invitation is not valid");
    // Joined now (as AddMember's members join when added).
    await this.d.publishChanges?.(memberEvents({ ...updated, createdAt: this.now() }));
    return updated;
  }

  async list(workspaceId: string): Promise<Member[]> {
    await this.d.workspaces.get(requireWorkspaceId(workspaceId));
    const members = await this.d.members.list(workspaceId);
    // Ids are time-ordered (ULID): they break ties of members added in the same millisecond.
    return members.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.publicId ?? a._id).localeCompare(b.publicId ?? b._id));
  }

  async updateRole(workspaceId: string, memberRef: string, role: string, actingRole?: string): Promise<Member> {
    const member = await this.member(workspaceId, memberRef);
    const next = parseMemberRole(role);
    this.checkActing(actingRole, next, roleOfMember(member));
    if (next === roleOfMember(member)) return member;
    return this.setRole(member, next);
  }

  /**
   * Changes a role under the last-owner rule. Checked before and again after the write: two
   * owners demoting each other at once both see the other; the second check puts back the one
   * that left no owner.
   */
  private async setRole(member: Member, next: MemberRole): Promise<Member> {
    const demotesOwner = roleOfMember(member) === "OWNER" && next !== "OWNER" && isActive(member);
    if (demotesOwner && (await this.d.members.countActiveOwners(member.workspaceId)) <= 1) throw lastOwner();
    const updated = await this.d.members.update(member.workspaceId, member.publicId!, { role: next });
    if (!updated) throw notFound("member_not_found", `Member ${member.publicId} not found`);
    if (demotesOwner && (await this.d.members.countActiveOwners(member.workspaceId)) === 0) {
      await this.d.members.update(member.workspaceId, member.publicId!, { role: "OWNER" });
      throw lastOwner();
    }
    return updated;
  }

  /** Removes a member: its sessions and open invitations end at once; keys it owns stop working (they find no owner). */
  async remove(workspaceId: string, memberRef: string, actingRole?: string): Promise<Member> {
    const member = await this.member(workspaceId, memberRef);
    this.checkActing(actingRole, roleOfMember(member));
    // An owner leaves the owners first, under the same rule as a demotion.
    if (roleOfMember(member) === "OWNER") await this.setRole(member, "VIEWER");
    await this.d.members.removeMember(workspaceId, member.publicId!);
    await this.d.sessions.removeForMember(workspaceId, member.publicId!);
    await this.d.tokens.removeForMember(workspaceId, member.publicId!);
    return member;
  }

  /** The ACTIVE memberships of an email and the one to sign in to (the given workspace, or the oldest). */
  private async membershipFor(email: string, workspaceId?: string): Promise<{ member?: Member; workspaceIds: string[] }> {
    const active = (await this.d.members.listByEmail(email)).filter(isActive);
    const member = workspaceId ? active.find((m) => m.workspaceId === workspaceId) : active[0];
    return { member, workspaceIds: active.map((m) => m.workspaceId) };
  }

  /** A magic-link token for an ACTIVE member; nothing (no error) for anyone else. */
  async startMagicLink(emailRaw: string, workspaceId?: string): Promise<{ token: string; email: string; workspaceIds: string[]; workspaceId: string; expiresAt?: Date }> {
    const email = normalizeEmail(typeof emailRaw === "string" ? emailRaw : "");
    if (!email) return { token: "", email: "", workspaceIds: [], workspaceId: "" };
    const { member, workspaceIds } = await this.membershipFor(email, workspaceId || undefined);
    if (!member) return { token: "", email: "", workspaceIds: [], workspaceId: "" };
    const token = signTeamToken(this.d.secrets, "mlk");
    const now = this.now();
    const expiresAt = new Date(now.getTime() + TEAM_LIFETIMES.magicLink);
    await this.d.tokens.insert({
      _id: newId("mlk"),
      kind: "magic_link",
      tokenHash: hashTeamToken(token),
      workspaceId: member.workspaceId,
      memberId: member.publicId!,
      email,
      createdAt: now,
      expiresAt,
      usedAt: null,
    });
    return { token, email, workspaceIds, workspaceId: member.workspaceId, expiresAt };
  }

  async redeemMagicLink(token: string, client: { userAgent?: string; ip?: string }): Promise<SignIn> {
    const link = await this.spend("magic_link", token);
    const member = await this.d.members.findByPublicId(link.workspaceId, link.memberId);
    if (!member || !isActive(member)) throw unauthenticated("magic_link_invalid", "This magic link is not valid");
    return this.openSession(member, "magic_link", client);
  }

  /**
   * Signs in an email the caller verified with OpenID Connect. The first sign-in remembers
   * (issuer, subject); a later one from another identity with the same email is refused.
   */
  async signInWithOidc(input: { email: string; issuer: string; subject: string; userAgent?: string; ip?: string; workspaceId?: string }): Promise<SignIn> {
    const email = this.parseEmail(input.email);
    if (!input.issuer || !input.subject) throw badRequest("invalid_request", "issuer and subject are required");
    const { member } = await this.membershipFor(email, input.workspaceId || undefined);
    if (!member) throw forbidden("member_not_active", `${email} is no active member${input.workspaceId ? ` of ${input.workspaceId}` : ""}`);
    if (member.oidcSubject || member.oidcIssuer) {
      if (member.oidcIssuer !== input.issuer || member.oidcSubject !== input.subject) {
        throw forbidden("oidc_subject_mismatch", "This account signed in before with another OpenID Connect identity");
      }
    } else {
      await this.d.members.update(member.workspaceId, member.publicId!, { oidcIssuer: input.issuer, oidcSubject: input.subject });
    }
    return this.openSession(member, "oidc", input);
  }

  private async openSession(member: Member, method: SessionRecord["method"], client: { userAgent?: string; ip?: string }): Promise<SignIn> {
    const now = this.now();
    const token = newSessionToken();
    const record: SessionRecord = {
      _id: newId("ses"),
      workspaceId: member.workspaceId,
      memberId: member.publicId!,
      tokenHash: hashTeamToken(token),
      tokenIssuedAt: now,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: this.expiry(now, now),
      userAgent: String(client.userAgent ?? "").slice(0, 500),
      ip: String(client.ip ?? "").slice(0, 100),
      method,
    };
    await this.d.sessions.insert(record);
    await this.d.members.update(member.workspaceId, member.publicId!, { lastSignInAt: now });
    return { session: publicSession(record), token };
  }

  private expiry(createdAt: Date, lastSeenAt: Date): Date {
    return new Date(Math.min(lastSeenAt.getTime() + TEAM_LIFETIMES.sessionIdle, createdAt.getTime() + TEAM_LIFETIMES.sessionMax));
  }

  /** The session and member of a token; rotates a token older than an hour. */
  async getSession(token: string): Promise<{ session: Session; member: Member; rotatedToken?: string }> {
    const invalid = () => unauthenticated("session_invalid", "Session expired or signed out");
    if (typeof token !== "string" || !token.startsWith("ses_") || token.length > 200) throw invalid();
    const now = this.now();
    const hash = hashTeamToken(token);
    const record = await this.d.sessions.findByTokenHash(hash, now);
    if (!record || record.expiresAt.getTime() <= now.getTime()) throw invalid();
    const member = await this.d.members.findByPublicId(record.workspaceId, record.memberId);
    if (!member || !isActive(member)) {
      await this.d.sessions.remove(record.workspaceId, record._id);
      throw invalid();
    }
    // A banned workspace's console is closed, as its keys are (403 workspace_banned).
    const workspace = await this.d.workspaces.find(record.workspaceId);
    if (!workspace) throw invalid();
    assertNotBanned(workspace);
    let rotatedToken: string | undefined;
    if (record.tokenHash === hash && now.getTime() - record.tokenIssuedAt.getTime() >= TEAM_LIFETIMES.sessionRotation) {
      const next = newSessionToken();
      const rotated = await this.d.sessions.rotate(record._id, hash, {
        tokenHash: hashTeamToken(next),
        tokenIssuedAt: now,
        previousValidUntil: new Date(now.getTime() + TEAM_LIFETIMES.rotationGrace),
      });
      if (rotated) rotatedToken = next;
    }
    let session = record;
    if (now.getTime() - record.lastSeenAt.getTime() >= TEAM_LIFETIMES.lastSeenResolution) {
      const expiresAt = this.expiry(record.createdAt, now);
      await this.d.sessions.touch(record._id, now, expiresAt);
      session = { ...record, lastSeenAt: now, expiresAt };
    }
    return { session: publicSession(session), member, ...(rotatedToken ? { rotatedToken } : {}) };
  }

  async listSessions(workspaceId: string, memberRef: string): Promise<Session[]> {
    const member = await this.member(workspaceId, memberRef);
    const now = this.now().getTime();
    return (await this.d.sessions.list(workspaceId, member.publicId!)).filter((s) => s.expiresAt.getTime() > now).map(publicSession);
  }

  async revokeSession(workspaceId: string, sessionId: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    if (!(typeof sessionId === "string" && sessionId && (await this.d.sessions.remove(workspaceId, sessionId)))) {
      throw notFound("session_not_found", `Session ${String(sessionId).slice(0, 100)} not found`);
    }
  }

  async revokeAllSessions(workspaceId: string, memberRef: string): Promise<number> {
    const member = await this.member(workspaceId, memberRef);
    return this.d.sessions.removeForMember(workspaceId, member.publicId!);
  }
}
