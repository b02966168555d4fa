import type { ContactRecord, ImportRecord, SuppressionRecord } from "./records.js";
import { groupPublicId } from "./records.js";

/** A contact as the audience unit holds it, in the terms an import compares. */
export interface ExistingContact {
  id: string;
  emailLower: string;
  firstName: string;
  lastName: string;
  timezone: string;
  status: string;
  fields: Record<string, string>;
  properties: Record<string, unknown>;
  /** Milliseconds; unchanged by an upsert that changes nothing. */
  updatedAt: number;
}

export interface UpsertOutcome {
  ok: boolean;
  created: boolean;
  contact?: ExistingContact;
  error?: string;
}

export type SuppressionOutcome = { status: "created" | "existing" } | { status: "rejected"; reason: string };

/** What an import needs of the audience unit (cli/import/target.ts over Connect; a fake in tests). */
export interface ImportTarget {
  /** Every property slug of the workspace, built-ins included. */
  propertySlugs(): Promise<Set<string>>;
  createProperty(slug: string, displayName: string): Promise<void>;
  /** The contacts among these lower-cased addresses, by lower-cased address. */
  findContacts(emailsLower: string[]): Promise<Map<string, ExistingContact>>;
  /** At most 1,000, without repeats; results in input order. */
  upsertContacts(items: ContactRecord[]): Promise<UpsertOutcome[]>;
  /** Which of these (by suppressionKey) are suppressed already. */
  findSuppressed(items: SuppressionRecord[]): Promise<Set<string>>;
  /** At most 1,000, without repeats; idempotent; results in input order. */
  addSuppressions(items: SuppressionRecord[]): Promise<SuppressionOutcome[]>;
  /** The workspace's groups: publicId → id. */
  groups(): Promise<Map<string, string>>;
  createGroup(publicId: string, displayName: string): Promise<string>;
  /** The lower-cased addresses among these that are in the group. */
  groupMembers(groupId: string, emailsLower: string[]): Promise<Set<string>>;
  /** False when the contact was a member already. */
  addToGroup(groupId: string, contactId: string): Promise<boolean>;
}

export interface RejectedRow {
  file: string;
  line: number;
  email: string;
  reason: string;
}

export interface ImportSummary {
  dryRun: boolean;
  /** Rows read (a row may give a contact and a suppression). */
  rows: number;
  contacts: { created: number; updated: number; unchanged: number; rejected: number };
  suppressions: { created: number; existing: number; rejected: number };
  groups: { created: string[]; memberships: number };
  properties: { created: string[] };
  /** Rows that carry nothing over, by reason. */
  skipped: Record<string, number>;
  /** The first MAX_REJECTED_KEPT rejected rows; rejectedCount counts them all. */
  rejected: RejectedRow[];
  rejectedCount: number;
}

export interface ApplyOptions {
  records: AsyncIterable<ImportRecord>;
  target: ImportTarget;
  dryRun?: boolean;
  /** Contacts per upsert (1-1000). */
  batchSize?: number;
  onProgress?: (rows: number) => void;
}

export const MAX_REJECTED_KEPT = 1_000;
const SUPPRESSION_BATCH = 1_000;
const GROUP_CONCURRENCY = 8;

export const suppressionKey = (s: Pick<SuppressionRecord, "email" | "domain">) => (s.domain ? `@${s.domain.toLowerCase()}` : (s.email ?? "").toLowerCase());

/** Text of a stored value as an export would write it (for the dry run's comparison). */
const asText = (v: unknown) => (v === undefined || v === null ? "" : Array.isArray(v) ? v.join(",") : String(v));

/**
 * Whether an upsert of `record` would change `existing`: the fields it names, with the
 * audience unit's rule that an import never lifts UNSUBSCRIBED or BANNED.
 */
export function wouldChange(existing: ExistingContact, record: ContactRecord): boolean {
  const differs = (given: string | undefined, stored: string) => given !== undefined && given !== stored;
  if (differs(record.firstName, existing.firstName) || differs(record.lastName, existing.lastName) || differs(record.timezone, existing.timezone)) return true;
  if (record.status && record.status !== existing.status && !(record.status === "SUBSCRIBED" && ["UNSUBSCRIBED", "BANNED"].includes(existing.status))) return true;
  for (const [k, v] of Object.entries(record.fields)) if (v !== (existing.fields[k] ?? "")) return true;
  for (const [k, v] of Object.entries(record.properties)) if (v.trim().toLowerCase() !== asText(existing.properties[k]).toLowerCase()) return true;
  return false;
}

/** Runs promises from `items` at most `limit` at a time. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/**
 * Applies an importer's records to a workspace (or, with dryRun, only counts what would
 * change): contacts upserted in batches, then their group memberships; suppressions added in
 * batches of 1,000; missing custom properties and groups created first. Every step is
 * idempotent, so a second run of the same files changes nothing and says so.
 */
export async function applyImport(opts: ApplyOptions): Promise<ImportSummary> {
  const { target } = opts;
  const dryRun = opts.dryRun ?? false;
  const batchSize = Math.max(1, Math.min(opts.batchSize ?? 500, 1000));
  const summary: ImportSummary = {
    dryRun, rows: 0,
    contacts: { created: 0, updated: 0, unchanged: 0, rejected: 0 },
    suppressions: { created: 0, existing: 0, rejected: 0 },
    groups: { created: [], memberships: 0 },
    properties: { created: [] },
    skipped: {}, rejected: [], rejectedCount: 0,
  };
  const reject = (row: RejectedRow) => {
    summary.rejectedCount++;
    if (summary.rejected.length < MAX_REJECTED_KEPT) summary.rejected.push(row);
  };

  const slugs = await target.propertySlugs();
  const groupIds = await target.groups();
  /** Groups the dry run would create (publicIds). */
  const plannedGroups = new Set<string>();

  const ensureGroup = async (name: string): Promise<string | undefined> => {
    const publicId = groupPublicId(name);
    const known = groupIds.get(publicId);
    if (known) return known;
    if (dryRun) {
      if (!plannedGroups.has(publicId)) {
        plannedGroups.add(publicId);
        summary.groups.created.push(publicId);
      }
      return undefined;
    }
    const id = await target.createGroup(publicId, name.trim().slice(0, 200));
    groupIds.set(publicId, id);
    summary.groups.created.push(publicId);
    return id;
  };

  let contacts: ContactRecord[] = [];
  let contactEmails = new Set<string>();
  const flushContacts = async () => {
    if (!contacts.length) return;
    const batch = contacts;
    contacts = [];
    contactEmails = new Set();
    for (const c of batch) {
      for (const slug of Object.keys(c.properties)) {
        if (slugs.has(slug)) continue;
        if (!dryRun) await target.createProperty(slug, slug);
        slugs.add(slug);
        summary.properties.created.push(slug);
      }
    }
    const before = await target.findContacts(batch.map((c) => c.email.toLowerCase()));
    const joins: Array<{ contactId?: string; emailLower: string; group: string; isNew: boolean }> = [];
    if (dryRun) {
      for (const c of batch) {
        const existing = before.get(c.email.toLowerCase());
        if (!existing) summary.contacts.created++;
        else if (wouldChange(existing, c)) summary.contacts.updated++;
        else summary.contacts.unchanged++;
        for (const group of c.groups) joins.push({ contactId: existing?.id, emailLower: c.email.toLowerCase(), group, isNew: !existing });
      }
    } else {
      const results = await target.upsertContacts(batch);
      results.forEach((r, i) => {
        const c = batch[i];
        if (!r.ok || !r.contact) {
          summary.contacts.rejected++;
          reject({ file: c.file, line: c.line, email: c.email, reason: r.error ?? "refused" });
          return;
        }
        const existing = before.get(c.email.toLowerCase());
        if (r.created) summary.contacts.created++;
        else if (!existing || existing.updatedAt !== r.contact.updatedAt) summary.contacts.updated++;
        else summary.contacts.unchanged++;
        for (const group of c.groups) joins.push({ contactId: r.contact.id, emailLower: c.email.toLowerCase(), group, isNew: r.created });
      });
    }
    await applyJoins(joins);
  };

  const applyJoins = async (joins: Array<{ contactId?: string; emailLower: string; group: string; isNew: boolean }>) => {
    if (!joins.length) return;
    const byGroup = new Map<string, typeof joins>();
    for (const j of joins) {
      const list = byGroup.get(j.group) ?? [];
      list.push(j);
      byGroup.set(j.group, list);
    }
    for (const [name, list] of byGroup) {
      const groupId = await ensureGroup(name);
      if (dryRun) {
        const members = groupId ? await target.groupMembers(groupId, list.filter((j) => !j.isNew).map((j) => j.emailLower)) : new Set<string>();
        summary.groups.memberships += list.filter((j) => !members.has(j.emailLower)).length;
        continue;
      }
      await eachLimited(list, GROUP_CONCURRENCY, async (j) => {
        if (await target.addToGroup(groupId!, j.contactId!)) summary.groups.memberships++;
      });
    }
  };

  let suppressions: SuppressionRecord[] = [];
  let suppressionKeys = new Set<string>();
  const flushSuppressions = async () => {
    if (!suppressions.length) return;
    const batch = suppressions;
    suppressions = [];
    suppressionKeys = new Set();
    if (dryRun) {
      const existing = await target.findSuppressed(batch);
      for (const s of batch) {
        if (existing.has(suppressionKey(s))) summary.suppressions.existing++;
        else summary.suppressions.created++;
      }
      return;
    }
    const results = await target.addSuppressions(batch);
    results.forEach((r, i) => {
      if (r.status === "rejected") {
        summary.suppressions.rejected++;
        const s = batch[i];
        reject({ file: s.file, line: s.line, email: s.email ?? s.domain ?? "", reason: r.reason });
      } else summary.suppressions[r.status]++;
    });
  };

  let lastRow = "";
  for await (const record of opts.records) {
    const row = `${record.file}\n${record.line}`;
    if (row !== lastRow) {
      summary.rows++;
      lastRow = row;
      opts.onProgress?.(summary.rows);
    }
    switch (record.kind) {
      case "rejected":
        reject({ file: record.file, line: record.line, email: record.email, reason: record.reason });
        break;
      case "skipped":
        summary.skipped[record.reason] = (summary.skipped[record.reason] ?? 0) + 1;
        break;
      case "contact": {
        const key = record.email.toLowerCase();
        // A repeated address goes in the next batch, so the later row wins as it would one at a time.
        if (contactEmails.has(key)) await flushContacts();
        contacts.push(record);
        contactEmails.add(key);
        if (contacts.length >= batchSize) await flushContacts();
        break;
      }
      case "suppression": {
        const key = suppressionKey(record);
        if (suppressionKeys.has(key)) await flushSuppressions();
        suppressions.push(record);
        suppressionKeys.add(key);
        if (suppressions.length >= SUPPRESSION_BATCH) await flushSuppressions();
        break;
      }
    }
  }
  await flushContacts();
  await flushSuppressions();
  summary.rejected.sort((a, b) => (a.file === b.file ? a.line - b.line : a.file < b.file ? -1 : 1));
  return summary;
}
