import type { Client } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { LRUCache } from "lru-cache";
import type { AccountsService, Workspace as PbWorkspace } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { callNeighbour } from "@mailroom/kit/errors.js";
import type { TemplateKind, Workspace } from "@mailroom/records/model.js";
import type { SenderLookup, TemplateLookup, UsageReserver, WorkspaceLookup } from "@mailroom/records/account-ports.js";

const CALL = { timeoutMs: 10_000 };
/** Workspaces remembered at once; least recently used go first. */
const WORKSPACE_CACHE_MAX = 10_000;

const call = <T>(what: string, run: () => Promise<T>) => callNeighbour("accounts", what, run);

const dateOf = (t: Timestamp | undefined) => (t ? timestampDate(t) : new Date(0));

export function workspaceFromPb(w: PbWorkspace): Workspace {
  return {
    _id: w.id,
    name: w.name,
    timezone: w.timezone,
    flags: { broadcastEarlyAccess: Boolean(w.flags?.broadcastEarlyAccess), emailApiAddon: Boolean(w.flags?.emailApiAddon), verified: Boolean(w.flags?.verified) },
    monthlyLimit: Number(w.monthlyLimit),
    sendingAccountNew: w.sendingAccountNew,
    createdAt: dateOf(w.createdAt),
    updatedAt: dateOf(w.createdAt),
    sendingPaused: w.sendingPaused ? { reason: w.sendingPausedReason, at: dateOf(w.sendingPausedAt) } : null,
    banned: w.banned ? { reason: w.bannedReason, at: dateOf(w.bannedAt) } : null,
  };
}

/**
 * What the audience unit reads from the accounts unit, over Connect. A workspace is
 * remembered for `workspaceCacheMs` (its name, time zone and existence change rarely; every
 * contact write checks the workspace, an import thousands of times a second); an unknown one
 * never is, so a workspace created a moment ago is found at once. Senders, templates and
 * usage are asked every time: they decide what may be sent.
 */
export class AccountsClient implements WorkspaceLookup, SenderLookup, UsageReserver {
  private readonly workspaces: LRUCache<string, Workspace> | undefined;

  constructor(
    private readonly accounts: Client<typeof AccountsService>,
    private readonly templates: Client<typeof TemplateService>,
    workspaceCacheMs = 5_000,
  ) {
    if (workspaceCacheMs > 0) {
      this.workspaces = new LRUCache<string, Workspace>({
        max: WORKSPACE_CACHE_MAX,
        ttl: workspaceCacheMs,
        fetchMethod: (workspaceId) => this.fetchWorkspace(workspaceId),
      });
    }
  }

  async get(workspaceId: string): Promise<Workspace> {
    if (!this.workspaces) return this.fetchWorkspace(workspaceId);
    return (await this.workspaces.fetch(workspaceId))!;
  }

  private async fetchWorkspace(workspaceId: string): Promise<Workspace> {
    const res = await call("GetWorkspace", () => this.accounts.getWorkspace({ workspaceId }, CALL));
    return workspaceFromPb(res.workspace!);
  }

  async list(workspaceId: string) {
    const res = await call("ListSenders", () => this.accounts.listSenders({ workspaceId }, CALL));
    return {
      emails: res.emails.map((e) => ({ email: e.email, verified: e.verified })),
      domains: res.domains.map((d) => ({ domain: d.domain, verified: d.verified })),
    };
  }

  async check(workspaceId: string, from: string) {
    const res = await call("CheckSender", () => this.accounts.checkSender({ workspaceId, from }, CALL));
    return { allowed: res.allowed, address: res.address, allowedEmails: res.allowedEmails, allowedDomains: res.allowedDomains };
  }

  async reserve(workspaceId: string, count: number) {
    const res = await call("ReserveUsage", () => this.accounts.reserveUsage({ workspaceId, count: BigInt(count) }, CALL));
    return { granted: res.granted, used: Number(res.used), limit: Number(res.limit), period: res.period };
  }

  /** Templates by name (template_not_found, 404). */
  readonly templateLookup: TemplateLookup = { get: (workspaceId, name) => this.getTemplate(workspaceId, name) };

  private async getTemplate(workspaceId: string, name: string): Promise<{ name: string; kind?: TemplateKind }> {
    const res = await call("GetTemplate", () => this.templates.getTemplate({ workspaceId, name }, CALL));
    return { name: res.template!.name, kind: (res.template!.kind || "template") as TemplateKind };
  }
}
