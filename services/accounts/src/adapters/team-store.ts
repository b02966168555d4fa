import type { Collection, Store } from "@mailroom/store/port.js";
import type { SessionRecord, SessionRepository, TeamToken, TeamTokenRepository } from "../domain/team-ports.js";
import { asDoc, type Stored } from "@mailroom/records/documents.js";

const DAY_SECONDS = 86_400;

/** Invitations and magic links (collection team_tokens), by the hash of their token. */
export class TeamTokenStore implements TeamTokenRepository {
  private constructor(private readonly tokens: Collection<Stored<TeamToken>>) {}

  static async open(store: Store): Promise<TeamTokenStore> {
    const tokens = store.collection<Stored<TeamToken>>("team_tokens");
    await Promise.all([
      tokens.createIndex({ keys: { tokenHash: 1 }, unique: true }),
      tokens.createIndex({ keys: { workspaceId: 1, memberId: 1 } }),
      // Spent or expired tokens only answer "used"/"expired" for a while, then go.
      tokens.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 7 * DAY_SECONDS }),
    ]);
    return new TeamTokenStore(tokens);
  }

  async insert(token: TeamToken): Promise<void> {
    await this.tokens.insertOne(asDoc(token));
  }

  findByHash(tokenHash: string): Promise<TeamToken | null> {
    return this.tokens.findOne({ tokenHash });
  }

  async markUsed(tokenHash: string, at: Date): Promise<boolean> {
    return (await this.tokens.updateOne({ tokenHash, usedAt: null }, { $set: { usedAt: at } })).modifiedCount > 0;
  }

  async removeForMember(workspaceId: string, memberId: string): Promise<void> {
    await this.tokens.deleteMany({ workspaceId, memberId });
  }
}

/** Console sessions (collection sessions); a revoked session is deleted. */
export class SessionStore implements SessionRepository {
  private constructor(private readonly sessions: Collection<Stored<SessionRecord>>) {}

  static async open(store: Store): Promise<SessionStore> {
    const sessions = store.collection<Stored<SessionRecord>>("sessions");
    await Promise.all([
      sessions.createIndex({ keys: { tokenHash: 1 }, unique: true }),
      sessions.createIndex({ keys: { previousTokenHash: 1 }, sparse: true }),
      sessions.createIndex({ keys: { workspaceId: 1, memberId: 1, createdAt: -1 } }),
      sessions.createIndex({ keys: { expiresAt: 1 }, expireAfterSeconds: 0 }),
    ]);
    return new SessionStore(sessions);
  }

  async insert(session: SessionRecord): Promise<void> {
    await this.sessions.insertOne(asDoc(session));
  }

  async findByTokenHash(tokenHash: string, now: Date): Promise<SessionRecord | null> {
    return (
      (await this.sessions.findOne({ tokenHash })) ??
      (await this.sessions.findOne({ previousTokenHash: tokenHash, previousValidUntil: { $gt: now } }))
    );
  }

  async rotate(id: string, currentHash: string, next: { tokenHash: string; tokenIssuedAt: Date; previousValidUntil: Date }): Promise<boolean> {
    const result = await this.sessions.updateOne(
      { _id: id, tokenHash: currentHash },
      { $set: { tokenHash: next.tokenHash, tokenIssuedAt: next.tokenIssuedAt, previousTokenHash: currentHash, previousValidUntil: next.previousValidUntil } },
    );
    return result.modifiedCount > 0;
  }

  async touch(id: string, lastSeenAt: Date, expiresAt: Date): Promise<void> {
    await this.sessions.updateOne({ _id: id }, { $set: { lastSeenAt, expiresAt } });
  }

  find(workspaceId: string, id: string): Promise<SessionRecord | null> {
    return this.sessions.findOne({ _id: id, workspaceId });
  }

  list(workspaceId: string, memberId: string): Promise<SessionRecord[]> {
    return this.sessions.find({ workspaceId, memberId }, { sort: { createdAt: -1, _id: -1 }, limit: 1_000 });
  }

  async remove(workspaceId: string, id: string): Promise<boolean> {
    return (await this.sessions.deleteOne({ _id: id, workspaceId })).deletedCount > 0;
  }

  async removeForMember(workspaceId: string, memberId: string): Promise<number> {
    return (await this.sessions.deleteMany({ workspaceId, memberId })).deletedCount;
  }
}
