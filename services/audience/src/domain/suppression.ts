import { createHash } from "node:crypto";
import { ERASED_KEY_PREFIX } from "@mailroom/records/change-events.js";
import { AppError, badRequest, conflict, notFound } from "@mailroom/kit/errors.js";
import { normalizeDomain, normalizeEmail } from "@mailroom/records/address.js";
import { checkListLimit } from "./contacts.js";
import { scopedId, SUPPRESSION_REASONS, type Page, type Suppression, type SuppressionReason } from "@mailroom/records/model.js";
import type { ContactRepository, SuppressionRepository } from "@mailroom/records/ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";

export const CHECK_MAX_EMAILS = 10_000;
/** Entries of one AddSuppressions call (an import's batch). */
export const ADD_BATCH_MAX = 5_000;
const SUPPRESSION_CURSOR_MAX = 400;
const SOURCE_MAX = 500;
const SEARCH_MAX = 254;
/** A created_at further ahead than this is a mistake, not clock skew. */
const FUTURE_SLACK_MS = 5 * 60_000;
/** Reasons that outrank the others (a hashed suppression keeps the strongest it replaced). */
const STRONG_REASONS: SuppressionReason[] = ["hard_bounce", "complaint"];
export const ERASED_DETAIL = "address erased at the contact's request";
/** Keys of erased addresses start with this; no address can (a colon needs quoting). */
export { ERASED_KEY_PREFIX };
/** Keys of whole-domain suppressions: `@example.com`. */
export const DOMAIN_KEY_PREFIX = "@";
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * The key of an erased address's suppression (DESIGN §9.3): `sha256:` and the hex SHA-256 of
 * the workspace id and the lower-cased address, so the list holds no address yet a later send
 * to it still matches. The workspace id salts it: one address hashes differently per tenant.
 * (An address is guessable, so this keeps it out of the data, not out of reach of someone who
 * already knows it and can read the store.)
 */
export function erasedKey(workspaceId: string, emailLower: string): string {
  return `${ERASED_KEY_PREFIX}${createHash("sha256").update(`${workspaceId}\u0000${emailLower}`).digest("hex")}`;
}

export const domainKey = (domain: string) => `${DOMAIN_KEY_PREFIX}${domain}`;

/** What to suppress: one address or a whole domain. */
export type SuppressionTarget = { email?: string; domain?: string };

export interface SuppressionEntryInput extends SuppressionTarget {
  /** Default `imported`. */
  reason?: SuppressionReason;
  source?: string;
  createdAt?: Date;
}

export type SuppressionEntryResult =
  | { readonly outcome: "created" | "existing" }
  | { outcome: "rejected"; code: string; message: string };
/** Shared: a batch answers thousands of them. */
const CREATED: SuppressionEntryResult = Object.freeze({ outcome: "created" });
const EXISTING: SuppressionEntryResult = Object.freeze({ outcome: "existing" });

export interface SuppressionListQuery {
  limit?: number;
  cursor?: string;
  reason?: SuppressionReason;
  since?: Date;
  /** The start of an address or domain. */
  search?: string;
}

/** A target checked: its key and what it names. */
interface Resolved {
  key: string;
  emailLower?: string;
  domain?: string;
}

/** The one place targets are validated (the RPC, the batch, the console all come here). */
export function resolveTarget(target: SuppressionTarget): Resolved {
  const email = typeof target.email === "string" ? target.email.trim() : "";
  const domain = typeof target.domain === "string" ? target.domain.trim() : "";
  if (email && domain) throw badRequest("email_and_domain", "Give either an email or a domain, not both");
  if (domain) {
    const d = normalizeDomain(domain.replace(/^@/, ""));
    if (!d) throw badRequest("invalid_domain", `"${domain.slice(0, 200)}" is not a valid domain name`);
    return { key: domainKey(d), domain: d };
  }
  const emailLower = normalizeEmail(email);
  if (!emailLower) {
    throw email ? badRequest("invalid_email", `"${email.slice(0, 200)}" is not a valid email address`) : badRequest("invalid_request", "email or domain is required");
  }
  return { key: emailLower, emailLower };
}

function checkSource(source: string | undefined): string | undefined {
  if (source === undefined || source === "") return undefined;
  if (typeof source !== "string" || source.length > SOURCE_MAX || CONTROL.test(source)) {
    throw badRequest("invalid_source", `source must be at most ${SOURCE_MAX} characters without control characters`);
  }
  return source;
}

const isReason = (r: unknown): r is SuppressionReason => (SUPPRESSION_REASONS as readonly unknown[]).includes(r);


/**
 * Addresses and whole domains no mail may go to: unsubscribed, hard-bounced, complained,
 * added by hand or imported. Keyed by the fully lower-cased address (a domain by
 * `@domain`) so no spelling slips past it; a send's check is one lookup of the recipients'
 * keys, their erased keys and their domains' keys together.
 */
export class Suppressions {
  constructor(
    private readonly repo: SuppressionRepository,
    private readonly contacts: ContactRepository,
    private readonly now: Clock = systemClock,
  ) {}

  /**
   * Idempotent; the first reason is kept unless a stronger one (bounce, complaint) arrives.
   * An erased address stays hashed: a new reason strengthens its hashed entry, and the
   * address is not written down again. `asOf` (an unsubscribe reported late): the contact is
   * unsubscribed only if its status did not change after that moment.
   */
  async add(workspaceId: string, email: string, reason: SuppressionReason, detail = "", asOf?: Date, source?: string): Promise<Suppression> {
    return (await this.suppress(workspaceId, { email }, reason, { detail, asOf, source })).suppression;
  }

  /** `add` for an address or a whole domain; `created` is false when it was there already. */
  async suppress(
    workspaceId: string, target: SuppressionTarget, reason: SuppressionReason,
    opts: { detail?: string; asOf?: Date; source?: string } = {},
  ): Promise<{ suppression: Suppression; created: boolean }> {
    requireWorkspaceId(workspaceId);
    if (!isReason(reason)) throw badRequest("invalid_reason", `reason must be one of ${SUPPRESSION_REASONS.join(", ")}`);
    const { key, emailLower, domain } = resolveTarget(target);
    const source = checkSource(opts.source);
    const detail = (opts.detail ?? "").slice(0, 1000);
    const at = this.now();
    if (emailLower) {
      const erasedId = scopedId(workspaceId, erasedKey(workspaceId, emailLower));
      const erased = await this.repo.find(erasedId);
      if (erased) {
        if (STRONG_REASONS.includes(reason)) await this.repo.strengthen(erasedId, reason, ERASED_DETAIL);
        if (reason === "unsubscribed") await this.contacts.unsubscribe(workspaceId, emailLower, at, "unsubscribed", opts.asOf);
        return { suppression: { ...((await this.repo.find(erasedId)) ?? erased), emailLower }, created: false };
      }
    }
    const id = scopedId(workspaceId, key);
    const created = await this.repo.ensure({ _id: id, workspaceId, emailLower: key, ...(domain ? { domain } : {}), reason, detail, ...(source ? { source } : {}), createdAt: at });
    if (!created) {
      if (STRONG_REASONS.includes(reason)) await this.repo.strengthen(id, reason, detail);
      if (source) await this.repo.setSourceIfMissing(id, source);
    }
    // The contact (if any) stops receiving broadcasts too.
    if (reason === "unsubscribed" && emailLower) await this.contacts.unsubscribe(workspaceId, emailLower, at, "unsubscribed", opts.asOf);
    return { suppression: (await this.repo.find(id))!, created };
  }

  /**
   * A batch (an import, at most ADD_BATCH_MAX): each entry is created, already there
   * (existing: its address, its erased hash or the same key earlier in the batch) or
   * rejected with a code, on its own. One lookup and one write for the batch (the erased
   * hashes are looked up only in a workspace that has any); an existing entry is
   * strengthened as `add` would. Idempotent.
   */
  async addMany(workspaceId: string, entries: SuppressionEntryInput[]): Promise<SuppressionEntryResult[]> {
    requireWorkspaceId(workspaceId);
    if (!Array.isArray(entries) || !entries.length) throw badRequest("invalid_request", "entries must hold at least one entry");
    if (entries.length > ADD_BATCH_MAX) throw badRequest("invalid_request", `At most ${ADD_BATCH_MAX} entries per batch`);
    const now = this.now();
    const latest = now.getTime() + FUTURE_SLACK_MS;
    const results: SuppressionEntryResult[] = new Array(entries.length);
    const valid: Array<{ index: number; doc: Suppression; erasedId?: string }> = [];
    const hashed = await this.repo.hasErased(workspaceId);
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index];
      try {
        const reason = entry.reason ?? "imported";
        if (!isReason(reason)) throw badRequest("invalid_reason", `reason must be one of ${SUPPRESSION_REASONS.join(", ")}`);
        const { key, emailLower, domain } = resolveTarget(entry);
        const source = checkSource(entry.source);
        const createdAt = entry.createdAt ?? now;
        if (!(createdAt instanceof Date) || Number.isNaN(createdAt.getTime()) || createdAt.getTime() > latest) {
          throw badRequest("invalid_created_at", "created_at must be a valid time, not in the future");
        }
        const doc: Suppression = { _id: scopedId(workspaceId, key), workspaceId, emailLower: key, reason, detail: "", createdAt };
        if (domain) doc.domain = domain;
        if (source) doc.source = source;
        valid.push({ index, doc, erasedId: hashed && emailLower ? scopedId(workspaceId, erasedKey(workspaceId, emailLower)) : undefined });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results[index] = { outcome: "rejected", code: err.code, message: err.message };
      }
    }
    const ids: string[] = [];
    for (const v of valid) {
      ids.push(v.doc._id);
      if (v.erasedId) ids.push(v.erasedId);
    }
    const found = new Map<string, Suppression>();
    if (ids.length) for (const s of await this.repo.findMany(workspaceId, ids)) found.set(s._id, s);
    const toInsert: typeof valid = [];
    const seen = new Set<string>();
    // Entries already there (or earlier in the batch) with a strong reason: strengthened once the batch is written.
    const stronger: Array<{ id: string; reason: SuppressionReason; detail: string }> = [];
    for (const v of valid) {
      const there = found.get(v.doc._id) ?? (v.erasedId ? found.get(v.erasedId) : undefined);
      if (there || seen.has(v.doc._id)) {
        results[v.index] = EXISTING;
        if (STRONG_REASONS.includes(v.doc.reason) && !(there && STRONG_REASONS.includes(there.reason))) {
          stronger.push({ id: there?._id ?? v.doc._id, reason: v.doc.reason, detail: there && there._id === v.erasedId ? ERASED_DETAIL : "" });
        }
        continue;
      }
      seen.add(v.doc._id);
      toInsert.push(v);
    }
    const inserted = new Set<string>();
    if (toInsert.length) for (const s of await this.repo.ensureMany(toInsert.map((v) => v.doc))) inserted.add(s._id);
    const unsubscribed: string[] = [];
    for (const v of toInsert) {
      const created = inserted.has(v.doc._id);
      results[v.index] = created ? CREATED : EXISTING;
      if (!created && STRONG_REASONS.includes(v.doc.reason)) stronger.push({ id: v.doc._id, reason: v.doc.reason, detail: "" });
      if (created && v.doc.reason === "unsubscribed" && !v.doc.domain) unsubscribed.push(v.doc.emailLower);
    }
    // Their contacts (if any) stop receiving broadcasts too: one read finds which have one,
    // so an import of addresses that are not contacts costs no lookup per row.
    if (unsubscribed.length) {
      for (const contact of await this.contacts.findManyByEmail(workspaceId, unsubscribed)) {
        await this.contacts.unsubscribe(workspaceId, contact.emailLower, now, "unsubscribed");
      }
    }
    for (const s of stronger) await this.repo.strengthen(s.id, s.reason, s.detail);
    return results;
  }

  /** Lifts the address's suppression only while its reason is `unsubscribed` (the recipient's own choice). */
  async liftUnsubscribe(workspaceId: string, emailLower: string): Promise<void> {
    await this.repo.remove(scopedId(workspaceId, emailLower), "unsubscribed");
  }

  /** Lifts the address's suppression, its hashed one (an erased address) included, whatever its reason. */
  async remove(workspaceId: string, email: string): Promise<void> {
    await this.lift(workspaceId, { email }, { force: true });
  }

  /**
   * Lifts one address's suppression (its hashed one, an erased address, included) or one
   * domain's, and answers what was lifted. A complaint is lifted only with `force` (409
   * `force_required`): the recipient said this mail is spam. `requireFound`: 404 when
   * nothing was suppressed.
   */
  async lift(workspaceId: string, target: SuppressionTarget, opts: { force?: boolean; requireFound?: boolean } = {}): Promise<Suppression | null> {
    requireWorkspaceId(workspaceId);
    const { key, emailLower, domain } = resolveTarget(target);
    const named = emailLower ?? domain;
    const ids = [scopedId(workspaceId, key), ...(emailLower ? [scopedId(workspaceId, erasedKey(workspaceId, emailLower))] : [])];
    const found = await this.repo.findMany(workspaceId, ids);
    if (!opts.force && found.some((s) => s.reason === "complaint")) {
      throw conflict("force_required", `${named} is suppressed for a spam complaint; lifting it needs force: true`);
    }
    let removed: Suppression | null = null;
    for (const id of ids) {
      const gone = await this.repo.remove(id, undefined, opts.force ? {} : { unless: "complaint" });
      if (gone) removed ??= emailLower && gone._id !== ids[0] ? { ...gone, emailLower } : gone;
    }
    if (!removed && opts.requireFound) {
      // A complaint that arrived between the read and the removal is still there.
      if (!opts.force && (await this.repo.findMany(workspaceId, ids)).some((s) => s.reason === "complaint")) {
        throw conflict("force_required", `${named} is suppressed for a spam complaint; lifting it needs force: true`);
      }
      throw notFound("suppression_not_found", `${named} is not suppressed`);
    }
    return removed;
  }

  /**
   * Erasure: the address's suppression becomes a hashed one (with the strongest reason it
   * had; `manual` when it had none), so mail to it stays suppressed while the address itself
   * is no longer kept. The hashed entry is written before the plain one goes: never a moment
   * without either. Idempotent.
   */
  async erase(workspaceId: string, emailLower: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    const plainId = scopedId(workspaceId, emailLower);
    const key = erasedKey(workspaceId, emailLower);
    const erasedId = scopedId(workspaceId, key);
    const plain = await this.repo.find(plainId);
    const reason = plain?.reason ?? "manual";
    await this.repo.ensure({ _id: erasedId, workspaceId, emailLower: key, reason, detail: ERASED_DETAIL, createdAt: plain?.createdAt ?? this.now() });
    if (STRONG_REASONS.includes(reason)) await this.repo.strengthen(erasedId, reason, ERASED_DETAIL);
    await this.repo.remove(plainId, undefined, { quiet: true });
  }

  /**
   * The suppressed ones among `emails` (unparseable addresses are simply not suppressed), in
   * one lookup: each address's key, its erased key and its domain's key. An erased address's
   * hashed entry, and a domain's entry, answer with the address asked about (a domain's
   * entry naming its domain); an address's own entry wins over its domain's.
   */
  async check(workspaceId: string, emails: string[]): Promise<Suppression[]> {
    requireWorkspaceId(workspaceId);
    if (emails.length > CHECK_MAX_EMAILS) throw badRequest("invalid_request", `At most ${CHECK_MAX_EMAILS} addresses per check`);
    const addresses = [...new Set(emails.map((e) => String(e).trim().toLowerCase()).filter(Boolean))];
    if (!addresses.length) return [];
    const byErasedKey = new Map(addresses.map((a) => [erasedKey(workspaceId, a), a]));
    const byDomainKey = new Map<string, string[]>();
    for (const a of addresses) {
      const at = a.lastIndexOf("@");
      if (at < 1 || at === a.length - 1) continue;
      const k = domainKey(a.slice(at + 1));
      const list = byDomainKey.get(k);
      if (list) list.push(a);
      else byDomainKey.set(k, [a]);
    }
    const ids = [...addresses, ...byErasedKey.keys(), ...byDomainKey.keys()].map((k) => scopedId(workspaceId, k));
    const found = await this.repo.findMany(workspaceId, ids);
    const out = new Map<string, Suppression>();
    const viaDomain: Suppression[] = [];
    for (const s of found) {
      const erasedAddress = byErasedKey.get(s.emailLower);
      if (erasedAddress) out.set(erasedAddress, { ...s, emailLower: erasedAddress });
      else if (s.emailLower.startsWith(DOMAIN_KEY_PREFIX)) viaDomain.push(s);
      else if (!out.has(s.emailLower)) out.set(s.emailLower, s);
    }
    for (const s of viaDomain) {
      for (const address of byDomainKey.get(s.emailLower) ?? []) if (!out.has(address)) out.set(address, { ...s, emailLower: address });
    }
    return [...out.values()];
  }

  /** Listed suppressions (erased, hashed ones never are) in key order: addresses and `@domain` keys. */
  async list(workspaceId: string, opts: SuppressionListQuery = {}): Promise<Page<Suppression>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit);
    if (opts.cursor && (opts.cursor.length > SUPPRESSION_CURSOR_MAX || !opts.cursor.startsWith(`${workspaceId}:`))) {
      throw badRequest("invalid_cursor", "cursor is not one this API returned");
    }
    const docs = await this.repo.page(workspaceId, { ...this.filters(opts), after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  /** Every listed suppression matching the filters, a batch at a time (an export, any size, bounded memory). */
  async *export(workspaceId: string, opts: Omit<SuppressionListQuery, "limit" | "cursor"> & { batchSize?: number } = {}): AsyncGenerator<Suppression[]> {
    requireWorkspaceId(workspaceId);
    const batch = Math.min(Math.max(opts.batchSize || 1_000, 1), 5_000);
    const filters = this.filters(opts);
    let after: string | undefined;
    for (;;) {
      const docs = await this.repo.page(workspaceId, { ...filters, after, limit: batch });
      if (docs.length) yield docs;
      if (docs.length < batch) return;
      after = docs[docs.length - 1]._id;
    }
  }

  private filters(opts: Omit<SuppressionListQuery, "limit" | "cursor">) {
    if (opts.reason !== undefined && !isReason(opts.reason)) throw badRequest("invalid_reason", `reason must be one of ${SUPPRESSION_REASONS.join(", ")}`);
    if (opts.since !== undefined && (!(opts.since instanceof Date) || Number.isNaN(opts.since.getTime()))) throw badRequest("invalid_request", "since must be a valid time");
    const search = (opts.search ?? "").trim().toLowerCase();
    if (search.length > SEARCH_MAX) throw badRequest("invalid_request", `search is at most ${SEARCH_MAX} characters`);
    // The store leaves the erased (hashed) keys out whatever the search.
    return { reason: opts.reason, since: opts.since, prefix: search || undefined };
  }
}
