import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { LRUCache } from "lru-cache";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ContactService, Contact as PbContact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { AudienceMember, AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import type { Contact, Directory, SenderCheck, UsageReservation, WorkspaceInfo } from "../domain/ports.js";
import type { BroadcastAudience } from "../domain/model.js";
import { asDomainError } from "./errors.js";

const RPC = { timeoutMs: 15_000 };
/** CheckSuppression takes up to 10000 addresses per call. */
const SUPPRESSION_BATCH = 10_000;
const STREAM_BATCH = 1_000;
/** PlanBestHours takes up to 5000 contacts per call. */
const PLAN_BATCH = 5_000;

/**
 * Without the audience unit's AudienceService (unit tests of this adapter), `{ all: true }` is
 * read from StreamContacts: a contact is in it when `subscribed` is true.
 */
export const inAudience = (c: PbContact) => c.subscribed;

/** The broadcast's audience as the audience unit's AudienceService takes it (filters stay JSON text). */
export function audienceRequest(a: BroadcastAudience) {
  return {
    all: a.all === true,
    groups: a.groups ?? [],
    segmentId: a.segmentId ?? "",
    filterJson: a.filterJson ?? "",
    exclude: a.exclude ? { groups: a.exclude.groups ?? [], segmentId: a.exclude.segmentId ?? "", filterJson: a.exclude.filterJson ?? "" } : undefined,
    topicId: a.topicId ?? "",
  };
}

const isAll = (a: BroadcastAudience) => a.all === true && !a.exclude && !a.topicId;

function contactOf(c: PbContact): Contact {
  return {
    id: c.id,
    email: c.email,
    firstName: c.firstName,
    lastName: c.lastName,
    timezone: c.timezone,
    properties: { ...(c.properties ?? {}) },
  };
}

function memberOf(m: AudienceMember): Contact {
  return { id: m.id, email: m.email, firstName: m.firstName, lastName: m.lastName, timezone: m.timezone, properties: propertiesOf(m.propertiesJson) };
}

function propertiesOf(json: string): Record<string, unknown> {
  const value: unknown = json ? JSON.parse(json) : {};
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The neighbours the broadcast service's `Directory` port is made of. */
export interface DirectoryClients {
  /** The accounts unit's AccountsService: workspaces, sender checks, members, usage. */
  accounts: Client<typeof AccountsService>;
  /** The audience unit's ContactService: contacts, properties, suppressions, ReserveSendable. */
  contacts: Client<typeof ContactService>;
  /** The audience unit's AudienceService: every audience form (without it, only `{ all: true }`). */
  audiences?: Client<typeof AudienceService>;
}

/**
 * The `Directory` port over Connect: the accounts unit (workspaces, senders, members, usage)
 * and the audience unit (contacts, suppressions, audiences, best hours). Workspace flags are
 * cached briefly (gating reads them on every call); everything else is asked each time.
 */
export class DirectoryClient implements Directory {
  private readonly workspaces: LRUCache<string, WorkspaceInfo>;
  private readonly accounts: Client<typeof AccountsService>;
  private readonly contacts: Client<typeof ContactService>;
  private readonly audiences?: Client<typeof AudienceService>;

  constructor(clients: DirectoryClients, workspaceCacheMs = 2_000) {
    this.accounts = clients.accounts;
    this.contacts = clients.contacts;
    this.audiences = clients.audiences;
    this.workspaces = new LRUCache({ max: 10_000, ttl: Math.max(1, workspaceCacheMs) });
  }

  async workspace(workspaceId: string): Promise<WorkspaceInfo> {
    const hit = this.workspaces.get(workspaceId);
    if (hit) return hit;
    try {
      const { workspace } = await this.accounts.getWorkspace({ workspaceId }, RPC);
      if (!workspace) throw new Error(`accounts returned no workspace ${workspaceId}`);
      const info: WorkspaceInfo = {
        id: workspace.id,
        timezone: workspace.timezone,
        broadcastEarlyAccess: workspace.flags?.broadcastEarlyAccess ?? false,
        emailApiAddon: workspace.flags?.emailApiAddon ?? false,
        verified: workspace.flags?.verified ?? false,
        sendingAccountNew: workspace.sendingAccountNew,
        sendingPaused: workspace.sendingPaused,
        banned: workspace.banned,
        holdReason: workspace.banned ? workspace.bannedReason : workspace.sendingPausedReason,
      };
      this.workspaces.set(workspaceId, info);
      return info;
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    try {
      const res = await this.accounts.checkSender({ workspaceId, from }, RPC);
      return { allowed: res.allowed, allowedEmails: res.allowedEmails, allowedDomains: res.allowedDomains };
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async customPropertySlugs(workspaceId: string): Promise<string[]> {
    const { properties } = await this.contacts.listContactProperties({ workspaceId }, RPC);
    return properties.filter((p) => !p.builtIn).map((p) => p.slug);
  }

  async members(workspaceId: string): Promise<string[]> {
    return (await this.accounts.listMembers({ workspaceId }, RPC)).emails;
  }

  async contactByEmail(workspaceId: string, email: string): Promise<Contact | null> {
    try {
      const { contact } = await this.contacts.getContact({ workspaceId, email }, RPC);
      return contact ? contactOf(contact) : null;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return null;
      throw asDomainError(err);
    }
  }

  /**
   * StreamAudience in contact-id order, resumed after `afterId` by the audience unit itself. A
   * group deleted since the broadcast was written has no members there (the send goes on); a
   * deleted segment or topic fails with `audience_not_found`.
   */
  async *subscribedContacts(workspaceId: string, audience: BroadcastAudience, afterId?: string): AsyncIterable<Contact[]> {
    if (!this.audiences) {
      if (!isAll(audience)) throw new Error("the audience unit's AudienceService is needed for this audience");
      yield* this.allSubscribed(workspaceId, afterId);
      return;
    }
    try {
      const stream = this.audiences.streamAudience(
        { workspaceId, audience: audienceRequest(audience), afterId: afterId ?? "", batchSize: STREAM_BATCH, missingGroupsEmpty: true, membersOnly: true },
        { timeoutMs: 30 * 60_000 },
      );
      for await (const res of stream) {
        // Members (slim); a server from before members_only answers whole contacts.
        if (res.members.length) yield res.members.map(memberOf);
        else if (res.contacts.length) yield res.contacts.map(contactOf);
      }
    } catch (err) {
      throw asDomainError(err);
    }
  }

  /** StreamContacts (no start cursor: resuming after `afterId` skips what came before on this side). */
  private async *allSubscribed(workspaceId: string, afterId?: string): AsyncIterable<Contact[]> {
    const stream = this.contacts.streamContacts({ workspaceId, subscribedOnly: true, batchSize: STREAM_BATCH }, { timeoutMs: 30 * 60_000 });
    for await (const res of stream) {
      const batch = res.contacts.filter((c) => inAudience(c) && (!afterId || c.id > afterId)).map(contactOf);
      if (batch.length) yield batch;
    }
  }

  async suppressed(workspaceId: string, emails: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < emails.length; i += SUPPRESSION_BATCH) {
      const { suppressed } = await this.contacts.checkSuppression({ workspaceId, emails: emails.slice(i, i + SUPPRESSION_BATCH) }, RPC);
      for (const s of suppressed) out.add(s.email.toLowerCase());
    }
    return out;
  }

  /**
   * CountAudience (subscribed, not opted out of the topic, not suppressed); without the
   * AudienceService, ListContacts' total of the subscribed (one contact listed).
   */
  async audienceCount(workspaceId: string, audience: BroadcastAudience): Promise<number> {
    try {
      if (this.audiences) return Number((await this.audiences.countAudience({ workspaceId, audience: audienceRequest(audience) }, RPC)).count);
      if (!isAll(audience)) throw new Error("the audience unit's AudienceService is needed for this audience");
      const res = await this.contacts.listContacts({ workspaceId, subscribedOnly: true, includeCount: true, page: { limit: 1 } }, RPC);
      return Number(res.totalCount ?? 0n);
    } catch (err) {
      throw asDomainError(err);
    }
  }

  async usageLeft(workspaceId: string): Promise<number> {
    const res = await this.accounts.getUsage({ workspaceId }, RPC);
    return Number(res.limit) - Number(res.used);
  }

  async reserveSendable(workspaceId: string, emails: string[]): Promise<UsageReservation> {
    const res = await this.contacts.reserveSendable({ workspaceId, recipients: emails }, RPC);
    return { granted: res.granted, reserved: Number(res.reserved), suppressed: res.suppressed.map((s) => s.email.toLowerCase()), period: res.period };
  }

  async releaseUsage(workspaceId: string, count: number, period: string): Promise<void> {
    await this.accounts.releaseUsage({ workspaceId, count: BigInt(count), period }, RPC);
  }

  /** PlanBestHours in calls of at most PLAN_BATCH contacts (a page of recipients is one or two). */
  async bestHours(workspaceId: string, windowStart: Date, defaultTimeZone: string, contacts: { id: string; timezone: string }[]): Promise<(number | undefined)[]> {
    if (!this.audiences) return contacts.map(() => undefined);
    const out: (number | undefined)[] = [];
    try {
      for (let i = 0; i < contacts.length; i += PLAN_BATCH) {
        const batch = contacts.slice(i, i + PLAN_BATCH);
        const { dueInMs } = await this.audiences.planBestHours(
          { workspaceId, windowStart: timestampFromDate(windowStart), defaultTimeZone, contactIds: batch.map((c) => c.id), timeZones: batch.map((c) => c.timezone) },
          RPC,
        );
        for (const dueIn of dueInMs) out.push(dueIn >= 0 ? windowStart.getTime() + dueIn : undefined);
      }
    } catch (err) {
      // An audience unit from before PlanBestHours (a rolling upgrade): no plans, everyone as SMART.
      if (err instanceof ConnectError && err.code === Code.Unimplemented) return contacts.map(() => undefined);
      throw asDomainError(err);
    }
    return out;
  }
}
