import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ContactSource, ContactStatus, PropertyType, SuppressionEntryOutcome, SuppressionReason, type Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { ContactClient, GroupClient } from "../client.js";
import type { ExistingContact, ImportTarget, SuppressionOutcome } from "./apply.js";
import { suppressionKey } from "./apply.js";
import type { ContactRecord, SuppressionReasonName, SuppressionRecord } from "./records.js";

const REASON: Record<SuppressionReasonName, SuppressionReason> = {
  hard_bounce: SuppressionReason.HARD_BOUNCE, complaint: SuppressionReason.COMPLAINT, manual: SuppressionReason.MANUAL,
  unsubscribed: SuppressionReason.UNSUBSCRIBED, imported: SuppressionReason.IMPORTED,
};
const FIELDS = ["avatarUrl", "city", "language", "phone", "birthday", "countryCode"] as const;
/** Longest filter the audience unit takes is 32,768 characters of JSON: lookups go in chunks well below it. */
const FILTER_CHARS = 24_000;
const PAGE = 500;
/** The most groups the audience unit lists a page. */
const GROUP_PAGE = 100;
const millis = (t: Timestamp | undefined) => (t ? timestampDate(t).getTime() : 0);

function existing(c: Contact): ExistingContact {
  return {
    id: c.id, emailLower: c.email.toLowerCase(), firstName: c.firstName, lastName: c.lastName, timezone: c.timezone,
    status: ContactStatus[c.status] ?? "SUBSCRIBED",
    fields: Object.fromEntries(FIELDS.map((f) => [f, c[f]])),
    properties: (c.properties ?? {}) as Record<string, unknown>,
    updatedAt: millis(c.updatedAt ?? c.createdAt),
  };
}

/** Splits addresses into lists whose JSON stays under the filter's size. */
function chunks(emails: string[]): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const e of emails) {
    if (current.length && (size + e.length + 3 > FILTER_CHARS || current.length >= 1000)) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(e);
    size += e.length + 3;
  }
  if (current.length) out.push(current);
  return out;
}

/**
 * The import's calls to the audience unit over Connect, as the CLI's user (audited as cli:<user>). `label`
 * names the files in the audit entry of each suppression batch.
 */
export function connectTarget(client: ContactClient, groups: GroupClient, workspaceId: string, label: string): ImportTarget {
  /** Contacts matching a filter, every page. */
  async function contactsWhere(filter: unknown): Promise<Contact[]> {
    const found: Contact[] = [];
    let cursor = "";
    for (;;) {
      const res = await client.listContacts({ workspaceId, filter: JSON.stringify(filter), page: { limit: PAGE, cursor } });
      found.push(...res.contacts);
      if (!res.page?.hasMore) return found;
      cursor = res.page.nextCursor;
    }
  }

  return {
    async propertySlugs() {
      const res = await client.listContactProperties({ workspaceId });
      return new Set(res.properties.map((p) => p.slug));
    },
    async createProperty(slug, displayName) {
      await client.createContactProperty({ workspaceId, slug, type: PropertyType.STRING, options: [], displayName });
    },
    async findContacts(emailsLower) {
      const out = new Map<string, ExistingContact>();
      for (const chunk of chunks(emailsLower)) {
        for (const c of await contactsWhere({ email: { $in: chunk } })) out.set(c.email.toLowerCase(), existing(c));
      }
      return out;
    },
    async upsertContacts(items: ContactRecord[]) {
      const res = await client.batchUpsertContacts({
        workspaceId,
        contacts: items.map((c) => ({
          email: c.email,
          firstName: c.firstName,
          lastName: c.lastName,
          timezone: c.timezone,
          status: c.status ? ContactStatus[c.status] : undefined,
          textProperties: { ...c.fields, ...c.properties },
          source: ContactSource.CSV_IMPORT,
          createdAt: c.createdAt ? timestampFromDate(c.createdAt) : undefined,
        })),
      });
      const byIndex = new Map(res.results.map((r) => [r.index, r]));
      return items.map((_, i) => {
        const r = byIndex.get(i);
        if (!r) return { ok: false, created: false, error: "no answer for this row" };
        return { ok: r.ok, created: r.created, contact: r.contact ? existing(r.contact) : undefined, error: r.error?.message };
      });
    },
    async findSuppressed(items: SuppressionRecord[]) {
      const out = new Set<string>();
      const emails = items.filter((s) => s.email).map((s) => s.email!.toLowerCase());
      for (let i = 0; i < emails.length; i += 10_000) {
        const res = await client.checkSuppression({ workspaceId, emails: emails.slice(i, i + 10_000) });
        // An address suppressed through its domain is not an entry of its own: adding it still creates one.
        for (const s of res.suppressed) if (!s.domain) out.add(s.email.toLowerCase());
      }
      for (const s of items.filter((x) => x.domain)) {
        const res = await client.listSuppressions({ workspaceId, search: `@${s.domain!.toLowerCase()}`, page: { limit: 1, cursor: "" } });
        if (res.suppressions.some((x) => x.domain.toLowerCase() === s.domain!.toLowerCase())) out.add(suppressionKey(s));
      }
      return out;
    },
    async addSuppressions(items: SuppressionRecord[]): Promise<SuppressionOutcome[]> {
      const res = await client.addSuppressions({
        workspaceId,
        label,
        entries: items.map((s) => ({
          email: s.email ?? "", domain: s.domain ?? "", reason: REASON[s.reason], source: s.source.slice(0, 500),
          createdAt: s.createdAt ? timestampFromDate(s.createdAt) : undefined,
        })),
      });
      return items.map((_, i): SuppressionOutcome => {
        const r = res.results[i];
        if (r?.outcome === SuppressionEntryOutcome.CREATED) return { status: "created" };
        if (r?.outcome === SuppressionEntryOutcome.EXISTING) return { status: "existing" };
        return { status: "rejected", reason: r?.errorMessage || r?.errorCode || "refused" };
      });
    },
    async groups() {
      const out = new Map<string, string>();
      let cursor = "";
      for (;;) {
        const res = await groups.listGroups({ workspaceId, page: { limit: GROUP_PAGE, cursor } });
        for (const g of res.groups) out.set(g.publicId, g.id);
        if (!res.page?.hasMore) return out;
        cursor = res.page.nextCursor;
      }
    },
    async createGroup(publicId, displayName) {
      const res = await groups.createGroup({ workspaceId, publicId, displayName });
      return res.group!.id;
    },
    async groupMembers(groupId, emailsLower) {
      const out = new Set<string>();
      for (const chunk of chunks(emailsLower)) {
        for (const c of await contactsWhere({ $and: [{ email: { $in: chunk } }, { groups: groupId }] })) out.add(c.email.toLowerCase());
      }
      return out;
    },
    async addToGroup(groupId, contactId) {
      return (await groups.addGroupContact({ workspaceId, groupId, contactId })).added;
    },
  };
}
