import { badRequest } from "../../kit/src/errors.js";
import { normalizeEmail } from "./address.js";
import { checkListLimit, type Page } from "./contacts.js";
import { ensureDoc, scopedId, type DirectoryRepos, type SuppressionDoc, type SuppressionReason } from "./store.js";
import { requireWorkspaceId, systemClock, type Clock } from "./validation.js";

export const CHECK_MAX_EMAILS = 10_000;
const SUPPRESSION_CURSOR_MAX = 400;

/**
 * Addresses no mail may go to: unsubscribed, hard-bounced, complained or added by hand.
 * Keyed by the fully lower-cased address so no spelling slips past it.
 */
export class Suppressions {
  constructor(private readonly repos: DirectoryRepos, private readonly now: Clock = systemClock) {}

  /** Idempotent; the first reason is kept unless a stronger one (bounce, complaint) arrives. */
  async add(workspaceId: string, email: string, reason: SuppressionReason, detail = ""): Promise<SuppressionDoc> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    const id = scopedId(workspaceId, emailLower);
    const at = this.now();
    await ensureDoc(this.repos.suppressions, { _id: id }, { $setOnInsert: { workspaceId, emailLower, reason, detail: detail.slice(0, 1000), createdAt: at } });
    if (reason !== "unsubscribed" && reason !== "manual") {
      await this.repos.suppressions.updateOne({ _id: id, reason: { $in: ["unsubscribed", "manual"] } }, { $set: { reason, detail: detail.slice(0, 1000) } });
    }
    if (reason === "unsubscribed") {
      // The contact (if any) stops receiving broadcasts too.
      await this.repos.contacts.updateOne({ workspaceId, emailLower, subscribed: true }, { $set: { subscribed: false, updatedAt: at } });
    }
    return (await this.repos.suppressions.findOne({ _id: id }))!;
  }

  async remove(workspaceId: string, email: string): Promise<void> {
    requireWorkspaceId(workspaceId);
    const emailLower = normalizeEmail(email);
    if (!emailLower) throw badRequest("invalid_email", `"${String(email).slice(0, 200)}" is not a valid email address`);
    await this.repos.suppressions.deleteOne({ _id: scopedId(workspaceId, emailLower) });
  }

  /** The suppressed ones among `emails` (unparseable addresses are simply not suppressed). */
  async check(workspaceId: string, emails: string[]): Promise<SuppressionDoc[]> {
    requireWorkspaceId(workspaceId);
    if (emails.length > CHECK_MAX_EMAILS) throw badRequest("invalid_request", `At most ${CHECK_MAX_EMAILS} addresses per check`);
    const ids = [...new Set(emails.map((e) => String(e).trim().toLowerCase()).filter(Boolean))].map((e) => scopedId(workspaceId, e));
    if (!ids.length) return [];
    return this.repos.suppressions.find({ _id: { $in: ids }, workspaceId });
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<SuppressionDoc>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit);
    if (opts.cursor && (opts.cursor.length > SUPPRESSION_CURSOR_MAX || !opts.cursor.startsWith(`${workspaceId}:`))) {
      throw badRequest("invalid_cursor", "cursor is not one this API returned");
    }
    const filter: Record<string, unknown> = { workspaceId };
    if (opts.cursor) filter._id = { $gt: opts.cursor };
    const docs = await this.repos.suppressions.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
