import { normalizeEmail } from "@mailroom/records/address.js";
import { contactStatus, type ContactStatus } from "@mailroom/records/model.js";
import type { ContactRepository } from "@mailroom/records/ports.js";
import type { Suppressions } from "./suppression.js";
import type { Clock } from "@mailroom/records/validation.js";

/** What came back for one recipient, in domain terms (the consumer maps MailEvents to it). */
export interface MailOutcome {
  kind: "hard_bounce" | "complaint" | "unsubscribed";
  workspaceId: string;
  recipient: string;
  detail: string;
  /** When it happened (the event's occurredAt); an unsubscribe older than the contact's last status change is stale. */
  occurredAt?: Date;
  /** The email (trs_…) or broadcast (cmp_…) it came back from: the suppression's source. */
  source?: string;
}

/**
 * Keeps the suppression list and contact status current from what happened to sent mail.
 *
 * - hard bounce → suppression `hard_bounce`; the contact's status is left as it is (status is
 *   about consent, the bounce about the mailbox; the suppression alone stops all sending, and
 *   removing it — the address fixed — lets mail flow again without faking a re-subscribe).
 * - complaint → suppression `complaint` and the contact UNSUBSCRIBED (they said stop).
 * - unsubscribe → suppression `unsubscribed` and the contact UNSUBSCRIBED.
 *
 * A late unsubscribe (its event older than the contact's last status change: the contact was
 * resubscribed, by the manage page, the API or the console, after the click) is skipped whole:
 * neither the suppression nor the status, which would undo the newer choice.
 *
 * Idempotent: the inbound unit and the gateway may have added the suppression already, and a
 * redelivered event finds everything in place (ensure, strengthen-only-from-weak, and
 * SUBSCRIBED → UNSUBSCRIBED change nothing the second time).
 */
export class MailOutcomes {
  constructor(
    private readonly suppressions: Suppressions,
    private readonly contacts: ContactRepository,
    private readonly now: Clock,
  ) {}

  async record(outcome: MailOutcome): Promise<"recorded" | "ignored" | "stale"> {
    const emailLower = normalizeEmail(outcome.recipient);
    if (!outcome.workspaceId || !emailLower) return "ignored";
    const asOf = outcome.kind === "unsubscribed" ? outcome.occurredAt : undefined;
    if (asOf && (await this.changedSince(outcome.workspaceId, emailLower, asOf))) return "stale";
    // The contact's status write is conditional on asOf too (a resubscribe racing this one wins).
    await this.suppressions.add(outcome.workspaceId, emailLower, outcome.kind, outcome.detail, asOf, outcome.source);
    if (asOf && (await this.changedSince(outcome.workspaceId, emailLower, asOf, "SUBSCRIBED"))) {
      // Resubscribed while this was recorded: that lifted the unsubscribe, maybe before it was added back.
      await this.suppressions.liftUnsubscribe(outcome.workspaceId, emailLower);
      return "stale";
    }
    // Suppressions.add unsubscribes the contact for "unsubscribed" itself.
    if (outcome.kind === "complaint") await this.contacts.unsubscribe(outcome.workspaceId, emailLower, this.now(), "complaint");
    return "recorded";
  }

  /** Whether the address's contact changed status after `at` (and now has `status`, when given). */
  private async changedSince(workspaceId: string, emailLower: string, at: Date, status?: ContactStatus): Promise<boolean> {
    const contact = await this.contacts.findByEmail(workspaceId, emailLower);
    if (!contact?.statusChangedAt || new Date(contact.statusChangedAt).getTime() <= at.getTime()) return false;
    return !status || contactStatus(contact) === status;
  }
}
