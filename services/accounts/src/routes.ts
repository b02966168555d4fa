import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AccountsService, type DomainSchema, type WorkspaceSchema, type ApiKeySchema, type WorkspaceFlags as PbWorkspaceFlags } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import type { Accounts } from "./domain/accounts.js";
import type { Team } from "./domain/team.js";
import { appErrorCode } from "@mailroom/records/validation.js";
import { roleOf } from "./domain/keys.js";
import type { DomainView } from "./domain/senders.js";
import type { ApiKey, Workspace } from "@mailroom/records/model.js";

/** Proto ⇄ domain mapping only; every rule lives in the domain modules. */

const ts = (d: Date | null | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);
const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

export function workspaceToPb(w: Workspace): MessageInitShape<typeof WorkspaceSchema> {
  return {
    id: w._id,
    name: w.name,
    timezone: w.timezone,
    flags: { ...w.flags },
    monthlyLimit: BigInt(w.monthlyLimit),
    sendingAccountNew: w.sendingAccountNew,
    createdAt: ts(w.createdAt),
    sendingPaused: Boolean(w.sendingPaused),
    sendingPausedReason: w.sendingPaused?.reason ?? "",
    sendingPausedAt: ts(w.sendingPaused?.at),
    banned: Boolean(w.banned),
    bannedReason: w.banned?.reason ?? "",
    bannedAt: ts(w.banned?.at),
  };
}

function apiKeyToPb(k: ApiKey): MessageInitShape<typeof ApiKeySchema> {
  return {
    id: k._id, workspaceId: k.workspaceId, name: k.name, prefix: k.prefix, scopes: k.scopes, createdAt: ts(k.createdAt), revokedAt: ts(k.revokedAt),
    role: roleOf(k.scopes, Boolean(k.ownerMemberId)), updatedAt: ts(k.updatedAt ?? k.createdAt), ownerMemberId: k.ownerMemberId ?? "",
    lastUsedAt: ts(k.lastUsedAt),
  };
}

function domainToPb(d: DomainView): MessageInitShape<typeof DomainSchema> {
  return {
    domain: d.domain,
    verified: d.verified,
    dkimSelector: d.selector,
    dkimPublicKey: d.publicKey,
    records: d.records,
    verifiedAt: ts(d.verifiedAt),
    verificationError: d.verificationError,
    lastCheckedAt: ts(d.lastCheckedAt),
  };
}

const flagsFromPb = (f: PbWorkspaceFlags | undefined) =>
  f ? { broadcastEarlyAccess: f.broadcastEarlyAccess, emailApiAddon: f.emailApiAddon, verified: f.verified } : undefined;

function int64(value: bigint | undefined, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw badRequest("invalid_request", `${field} is out of range`);
  return Number(value);
}

/**
 * `team`: when given, RemoveMember goes through it (the last-owner rule; the member's sessions
 * end at once).
 */
export function accountsService(dir: Accounts, team?: Team): ServiceImpl<typeof AccountsService> {
  return {
    async authenticate(req) {
      return dir.keys.authenticate(req.apiKey, req.requiredScopes);
    },
    async createWorkspace(req) {
      const w = await dir.workspaces.create({
        id: req.id,
        name: req.name,
        timezone: req.timezone,
        flags: flagsFromPb(req.flags),
        // 0 on create means "not given": the default plan limit.
        monthlyLimit: req.monthlyLimit ? int64(req.monthlyLimit, "monthly_limit") : undefined,
        sendingAccountNew: req.sendingAccountNew,
      });
      return { workspace: workspaceToPb(w) };
    },
    async getWorkspace(req) {
      return { workspace: workspaceToPb(await dir.workspaces.get(req.workspaceId)) };
    },
    async updateWorkspace(req) {
      const w = await dir.workspaces.update(req.workspaceId, {
        name: req.name,
        timezone: req.timezone,
        flags: flagsFromPb(req.flags),
        monthlyLimit: int64(req.monthlyLimit, "monthly_limit"),
        sendingAccountNew: req.sendingAccountNew,
      });
      return { workspace: workspaceToPb(w) };
    },
    async setWorkspaceSendingPaused(req) {
      const { workspace, changed } = await dir.workspaces.setSendingPaused(req.workspaceId, req.paused, req.reason);
      return { workspace: workspaceToPb(workspace), changed };
    },
    async setWorkspaceBanned(req) {
      const { workspace, changed } = await dir.workspaces.setBanned(req.workspaceId, req.banned, req.reason);
      return { workspace: workspaceToPb(workspace), changed };
    },
    async listWorkspaces() {
      return { workspaces: (await dir.workspaces.list()).map(workspaceToPb) };
    },
    async loadBootstrap(req) {
      return { workspaceIds: await dir.bootstrap.loadJson(req.json) };
    },
    async createApiKey(req) {
      const { key, plain } = await dir.keys.create(req.workspaceId, { name: req.name, scopes: req.scopes, role: req.role || undefined, fixedKey: req.key, ownerMemberId: req.ownerMemberId || undefined });
      return { apiKey: apiKeyToPb(key), plainKey: plain };
    },
    async listApiKeys(req) {
      if (!req.limit && !req.startAt && !req.oldestFirst) return { apiKeys: (await dir.keys.list(req.workspaceId)).map(apiKeyToPb) };
      const page = await dir.keys.page(req.workspaceId, { limit: req.limit, newestFirst: !req.oldestFirst, startAt: dateOf(req.startAt) });
      return { apiKeys: page.items.map(apiKeyToPb), hasMore: page.hasMore, nextStartAt: ts(page.nextStartAt) };
    },
    async revokeApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.revoke(req.workspaceId, req.keyId)) };
    },
    async getApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.getActive(req.workspaceId, req.keyId)) };
    },
    async updateApiKey(req) {
      return { apiKey: apiKeyToPb(await dir.keys.update(req.workspaceId, req.keyId, { name: req.name, role: req.role })) };
    },
    async addVerifiedEmail(req) {
      const e = await dir.senders.addEmail(req.workspaceId, req.email, req.verified);
      return { email: e.email, verified: e.verified };
    },
    async addDomain(req) {
      return { domain: domainToPb(await dir.senders.addDomain(req.workspaceId, req.domain)) };
    },
    async getDomain(req) {
      return { domain: domainToPb(await dir.senders.getDomain(req.workspaceId, req.domain)) };
    },
    async verifyDomain(req) {
      return { domain: domainToPb(await dir.senders.verifyDomain(req.workspaceId, req.domain)) };
    },
    async checkDirectSending(req) {
      return dir.senders.checkDirectSending(req.workspaceId, req.domain, req.address, req.ehloName);
    },
    async listSenders(req) {
      const { emails, domains } = await dir.senders.list(req.workspaceId);
      return { emails: emails.map((e) => ({ email: e.email, verified: e.verified })), domains: domains.map(domainToPb) };
    },
    async markVerified(req) {
      if (req.target.case === "domain") await dir.senders.markDomainVerified(req.workspaceId, req.target.value);
      else if (req.target.case === "email") await dir.senders.markEmailVerified(req.workspaceId, req.target.value);
      else throw badRequest("invalid_request", "domain or email is required");
      return {};
    },
    async checkSender(req) {
      const r = await dir.senders.check(req.workspaceId, req.from);
      return { ...r, dkim: r.dkim };
    },
    async addMember(req) {
      await dir.members.add(req.workspaceId, req.email);
      return {};
    },
    async removeMember(req) {
      if (!team) {
        await dir.members.remove(req.workspaceId, req.email);
        return {};
      }
      const removed = await team.remove(req.workspaceId, req.email).catch((err: unknown) => {
        if (appErrorCode(err) !== "member_not_found") throw err; // removing a non-member changes nothing, as before
        return undefined;
      });
      return { memberId: removed?.publicId ?? "" };
    },
    async listMembers(req) {
      return { emails: await dir.members.list(req.workspaceId) };
    },
    async reserveUsage(req) {
      const r = await dir.usage.reserve(req.workspaceId, int64(req.count, "count")!);
      return { granted: r.granted, used: BigInt(r.used), limit: BigInt(r.limit), period: r.period };
    },
    async releaseUsage(req) {
      await dir.usage.release(req.workspaceId, int64(req.count, "count")!, req.period);
      return {};
    },
    async getUsage(req) {
      const r = await dir.usage.get(req.workspaceId);
      return { used: BigInt(r.used), limit: BigInt(r.limit), period: r.period };
    },
  };
}

export function accountsRoutes(accounts: Accounts, team?: Team) {
  return (router: ConnectRouter) => {
    router.service(AccountsService, accountsService(accounts, team));
  };
}
