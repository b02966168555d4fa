import { badRequest } from "@mailroom/kit/errors.js";
import { normalizeEmail } from "./address.js";
import { checkListLimit } from "./contacts.js";
import { scopedId, type Page, type Suppression, type SuppressionReason } from "./model.js";
import type { ContactRepository, SuppressionRepository } from "./ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export const CHECK_MAX_EMAILS = 10_000;
const SUPPRESSION_CURSOR_MAX = 400;

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

  /** Idempotent; the first reason is kept unless a stronger one (bounce, complaint) arrives. */
  async add(workspaceId: string, email: string, reason: SuppressionReason, detail = ""): Promise<Suppression> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    const id = scopedId(workspaceId, emailLower);
    const at = this.now();
    await this.repo.ensure({ _id: id, workspaceId, emailLower, reason, detail: detail.slice(0, 1000), createdAt: at });
    if (reason !== "unsubscribed" && reason !== "manual") await this.repo.strengthen(id, reason, detail.slice(0, 1000));
    // The contact (if any) stops receiving broadcasts too.
    if (reason === "unsubscribed") await this.contacts.unsubscribe(workspaceId, emailLower, at);
    return (await this.repo.find(id))!;
  }

  async remove(workspaceId: string, email: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    await this.repo.remove(scopedId(workspaceId, emailLower));
  }

  /** The suppressed ones among `emails` (unparseable addresses are simply not suppressed). */
  async check(workspaceId: string, emails: string[]): Promise<Suppression[]> {
    requireWorkspaceId(workspaceId);
    if (emails.length > CHECK_MAX_EMAILS) throw badRequest("invalid_request", `At most ${CHECK_MAX_EMAILS} addresses per check`);
    const ids = [...new Set(emails.map((e) => String(e).trim().toLowerCase()).filter(Boolean))].map((e) => scopedId(workspaceId, e));
    if (!ids.length) return [];
    return this.repo.findMany(workspaceId, ids);
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
