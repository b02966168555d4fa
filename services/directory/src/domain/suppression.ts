import { createHash } from "node:crypto";
import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeEmail } from "./address.js";
import { checkListLimit } from "./contacts.js";
import { scopedId, type Page, type Suppression, type SuppressionReason } from "./model.js";
import type { ContactRepository, SuppressionRepository } from "./ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export const CHECK_MAX_EMAILS = 10_000;
const SUPPRESSION_CURSOR_MAX = 400;
/** Reasons that outrank the others (a hashed suppression keeps the strongest it replaced). */
const STRONG_REASONS: SuppressionReason[] = ["hard_bounce", "complaint"];
export const ERASED_DETAIL = "address erased at the contact's request";

/**
 * The key of an erased address's suppression (DESIGN §9.3): `sha256:` and the hex SHA-256 of
 * the workspace id and the lower-cased address, so the list holds no address yet a later send
 * to it still matches. The workspace id salts it: one address hashes differently per tenant.
 * (An address is guessable, so this keeps it out of the data, not out of reach of someone who
 * already knows it and can read the store.)
 */
export function erasedKey(workspaceId: string, emailLower: string): string {
  return `sha256:${createHash("sha256").update(`${workspaceId}\u0000${emailLower}`).digest("hex")}`;
}

/**
 * Addresses no mail may go to: unsubscribed, hard-bounced, complained or added by hand.
 * Keyed by the fully lower-cased address so no spelling slips past it.
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
  async add(workspaceId: string, email: string, reason: SuppressionReason, detail = "", asOf?: Date): Promise<Suppression> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    const at = this.now();
    const erasedId = scopedId(workspaceId, erasedKey(workspaceId, emailLower));
    const erased = await this.repo.find(erasedId);
    if (erased) {
      if (STRONG_REASONS.includes(reason)) await this.repo.strengthen(erasedId, reason, ERASED_DETAIL);
      if (reason === "unsubscribed") await this.contacts.unsubscribe(workspaceId, emailLower, at, "unsubscribed", asOf);
      return { ...((await this.repo.find(erasedId)) ?? erased), emailLower };
    }
    const id = scopedId(workspaceId, emailLower);
    await this.repo.ensure({ _id: id, workspaceId, emailLower, reason, detail: detail.slice(0, 1000), createdAt: at });
    if (reason !== "unsubscribed" && reason !== "manual") await this.repo.strengthen(id, reason, detail.slice(0, 1000));
    // The contact (if any) stops receiving broadcasts too.
    if (reason === "unsubscribed") await this.contacts.unsubscribe(workspaceId, emailLower, at, "unsubscribed", asOf);
    return (await this.repo.find(id))!;
  }

  /** Lifts the address's suppression only while its reason is `unsubscribed` (the recipient's own choice). */
  async liftUnsubscribe(workspaceId: string, emailLower: string): Promise<void> {
    await this.repo.remove(scopedId(workspaceId, emailLower), "unsubscribed");
  }

  /** Lifts the address's suppression, its hashed one (an erased address) included. */
  async remove(workspaceId: string, email: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    await this.repo.remove(scopedId(workspaceId, emailLower));
    await this.repo.remove(scopedId(workspaceId, erasedKey(workspaceId, emailLower)));
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
    await this.repo.remove(plainId);
  }

  /**
   * The suppressed ones among `emails` (unparseable addresses are simply not suppressed). An
   * erased address's hashed entry answers with the address asked about, which is never stored.
   */
  async check(workspaceId: string, emails: string[]): Promise<Suppression[]> {
    requireWorkspaceId(workspaceId);
    if (emails.length > CHECK_MAX_EMAILS) throw badRequest("invalid_request", `At most ${CHECK_MAX_EMAILS} addresses per check`);
    const addresses = [...new Set(emails.map((e) => String(e).trim().toLowerCase()).filter(Boolean))];
    if (!addresses.length) return [];
    const byErasedKey = new Map(addresses.map((a) => [erasedKey(workspaceId, a), a]));
    const ids = [...addresses, ...byErasedKey.keys()].map((k) => scopedId(workspaceId, k));
    const found = await this.repo.findMany(workspaceId, ids);
    const out = new Map<string, Suppression>();
    for (const s of found) {
      const address = byErasedKey.get(s.emailLower);
      if (address) out.set(address, { ...s, emailLower: address });
      else if (!out.has(s.emailLower)) out.set(s.emailLower, s);
    }
    return [...out.values()];
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Suppression>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit);
    if (opts.cursor && (opts.cursor.length > SUPPRESSION_CURSOR_MAX || !opts.cursor.startsWith(`${workspaceId}:`))) {
      throw badRequest("invalid_cursor", "cursor is not one this API returned");
    }
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
