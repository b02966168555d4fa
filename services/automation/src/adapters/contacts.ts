/**
 * The audience unit (contacts, groups) and the accounts unit (workspace timezones) over
 * Connect, as the run engine uses them: contacts are read by address in
 * batches (every run of a round that needs its contact shares one ListContacts of up to 500
 * addresses), filter checks of one filter share one ListContacts (`{ "$and": [filter,
 * { "email": { "$in": [...] } }] }`), and a workspace's timezone is remembered a minute.
 */
import type { Client } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { LRUCache } from "lru-cache";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { AppError, appErrorFromInfo, errorInfoOf } from "@mailroom/kit/errors.js";
import { ContactStatus, type Contact, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import type { FilterJson } from "../domain/model.js";
import type { ContactDirectory, RunContact } from "../domain/runner.js";

const RPC = { timeoutMs: 15_000 };
/** ListContacts' largest page. */
const PAGE = 500;

const lower = (email: string) => email.toLowerCase();

export function runContactOf(c: Contact): RunContact {
  return {
    id: c.id,
    email: c.email,
    firstName: c.firstName || undefined,
    lastName: c.lastName || undefined,
    timezone: c.timezone || undefined,
    status: (ContactStatus[c.status] ?? "UNSPECIFIED").replace(/^CONTACT_STATUS_/, ""),
    properties: c.properties ?? {},
  };
}

/** A refusal the audience unit gave (its ErrorInfo), as an AppError; anything else as it came. */
function refusal(err: unknown): unknown {
  const info = errorInfoOf(err);
  return info ? appErrorFromInfo(info) : err;
}

export class ContactDirectoryClient implements ContactDirectory {
  private readonly byEmail = new Coalescer<string, RunContact | null>((ws, emails) => this.readContacts(ws, emails), PAGE);
  private readonly filtered = new Coalescer<string, boolean>((key, emails) => this.readMatches(key, emails), PAGE);
  private readonly timezones = new LRUCache<string, { tz: string | undefined }>({ max: 10_000, ttl: 60_000 });

  constructor(
    private readonly accounts: Client<typeof AccountsService>,
    private readonly contacts: Client<typeof ContactService>,
    private readonly groups: Client<typeof GroupService>,
  ) {}

  contactByEmail(workspaceId: string, email: string): Promise<RunContact | null> {
    return this.byEmail.run(workspaceId, lower(email));
  }

  private async readContacts(workspaceId: string, emails: string[]): Promise<(RunContact | null)[]> {
    const wanted = [...new Set(emails)];
    const res = await this.contacts.listContacts({ workspaceId, filter: JSON.stringify({ email: { $in: wanted } }), page: { limit: PAGE } }, RPC);
    const found = new Map(res.contacts.map((c) => [lower(c.email), runContactOf(c)]));
    return emails.map((e) => found.get(e) ?? null);
  }

  matches(workspaceId: string, filter: FilterJson, email: string): Promise<boolean> {
    return this.filtered.run(JSON.stringify([workspaceId, filter]), lower(email));
  }

  private async readMatches(key: string, emails: string[]): Promise<boolean[]> {
    const [workspaceId, filter] = JSON.parse(key) as [string, FilterJson];
    const wanted = [...new Set(emails)];
    try {
      const res = await this.contacts.listContacts(
        { workspaceId, filter: JSON.stringify({ $and: [filter, { email: { $in: wanted } }] }), page: { limit: PAGE } },
        RPC,
      );
      const matched = new Set(res.contacts.map((c) => lower(c.email)));
      return emails.map((e) => matched.has(e));
    } catch (err) {
      // A filter that became invalid (a property deleted since) matches nobody.
      const e = refusal(err);
      if (e instanceof AppError && e.code === "invalid_filter") return emails.map(() => false);
      throw e;
    }
  }

  async workspaceTimezone(workspaceId: string): Promise<string | undefined> {
    const cached = this.timezones.get(workspaceId);
    if (cached) return cached.tz;
    const res = await this.accounts.getWorkspace({ workspaceId }, RPC);
    const tz = res.workspace?.timezone || undefined;
    this.timezones.set(workspaceId, { tz });
    return tz;
  }

  async updateContact(workspaceId: string, contactId: string, properties: Record<string, unknown>): Promise<void> {
    await this.contacts.updateContact({ workspaceId, contactId, contact: { properties: properties as JsonObject } }, RPC);
  }

  async addToGroup(workspaceId: string, groupId: string, contactId: string): Promise<void> {
    await this.groups.addGroupContact({ workspaceId, groupId, contactId }, RPC);
  }

  async removeFromGroup(workspaceId: string, groupId: string, contactId: string): Promise<void> {
    await this.groups.removeGroupContact({ workspaceId, groupId, contactId }, RPC);
  }
}
