import type { Member, MemberRole } from "@mailroom/records/model.js";

/** An invitation or a magic link: single use, stored by the hash of its token. */
export interface TeamToken {
  /** "inv_…" / "mlk_…" (not the token). */
  _id: string;
  kind: "invitation" | "magic_link";
  tokenHash: string;
  workspaceId: string;
  memberId: string;
  email: string;
  /** Invitations: the role granted on acceptance. */
  role?: MemberRole;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** A console session; the token is stored only hashed. */
export interface SessionRecord {
  _id: string;
  workspaceId: string;
  memberId: string;
  tokenHash: string;
  tokenIssuedAt: Date;
  /** The token before the last rotation, accepted until previousValidUntil. */
  previousTokenHash?: string;
  previousValidUntil?: Date;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  userAgent: string;
  ip: string;
  method: "magic_link" | "oidc";
}

/** The members collection as the team reads and changes it. */
export interface TeamMemberRepository {
  findByPublicId(workspaceId: string, publicId: string): Promise<Member | null>;
  findByEmail(workspaceId: string, email: string): Promise<Member | null>;
  /** Every membership of an address, oldest first. */
  listByEmail(email: string): Promise<Member[]>;
  list(workspaceId: string): Promise<Member[]>;
  /** False when the workspace already has a member with this email. */
  insert(member: Member): Promise<boolean>;
  update(workspaceId: string, publicId: string, set: Partial<Omit<Member, "_id" | "workspaceId">>): Promise<Member | null>;
  removeMember(workspaceId: string, publicId: string): Promise<boolean>;
  countActiveOwners(workspaceId: string): Promise<number>;
}

export interface TeamTokenRepository {
  insert(token: TeamToken): Promise<void>;
  findByHash(tokenHash: string): Promise<TeamToken | null>;
  /** Marks an unused token used; false when it was used already (single use, atomic). */
  markUsed(tokenHash: string, at: Date): Promise<boolean>;
  removeForMember(workspaceId: string, memberId: string): Promise<void>;
}

export interface SessionRepository {
  insert(session: SessionRecord): Promise<void>;
  /** By the current token, or by the previous one while it is still valid at `now`. */
  findByTokenHash(tokenHash: string, now: Date): Promise<SessionRecord | null>;
  /** Replaces the token if it still is `currentHash` (one rotation wins). */
  rotate(id: string, currentHash: string, next: { tokenHash: string; tokenIssuedAt: Date; previousValidUntil: Date }): Promise<boolean>;
  touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void>;
  find(workspaceId: string, id: string): Promise<SessionRecord | null>;
  /** Newest first. */
  list(workspaceId: string, memberId: string): Promise<SessionRecord[]>;
  remove(workspaceId: string, id: string): Promise<boolean>;
  removeForMember(workspaceId: string, memberId: string): Promise<number>;
}
