import { appError } from "@mailroom/kit/errors.js";
import { parseRecipientToken } from "@mailroom/content/tokens.js";
import { classify, DELIVERY_ID_HEADER, unsubscribeTokenInSubject } from "./classify.js";
import { mailboxOf, verpDeliveryOf, type MailboxPolicy } from "./mailboxes.js";
import type { BounceVerdict, Envelope, Finding, InboundEvent, Mailbox, ProviderReport, SentDelivery } from "./model.js";
import type { Clock, Logger, MailEvents, SentDeliveries, Suppressions } from "./ports.js";
import { readMessage, type ReadMessage } from "./report.js";
import { eventId } from "./event-id.js";
export { eventId };
import type { Receiver, ReceiveOutcome } from "./receiving/receiver.js";

export interface InboundDeps {
  sent: SentDeliveries;
  suppressions: Suppressions;
  events: MailEvents;
  clock: Clock;
  logger: Logger;
  policy: MailboxPolicy;
  /** Receiving (DESIGN §10.4): mail to inbound domains' rules and the DMARC report mailbox. */
  receiver?: Receiver;
}

/** What one received message led to, one entry per mailbox it reached (for logs and tests). */
export type Outcome =
  | { kind: "hard-bounce" | "soft-bounce"; deliveryId: string; recipient: string; status: string }
  | { kind: "complaint"; deliveryId: string; recipient: string; feedbackType: string }
  | { kind: "unsubscribed"; workspaceId: string; recipient: string }
  | { kind: "delivered"; deliveryId: string; recipient: string }
  /** The provider failed temporarily and retries itself: DEFERRED, the email's status untouched. */
  | { kind: "deferred"; deliveryId: string; recipient: string }
  /** A fresh provider report naming our delivery before its SENT event was consumed: to be retried. */
  | { kind: "not-yet"; deliveryId: string }
  | { kind: "ignored"; reason: string }
  | ReceiveOutcome;

/**
 * How long after it happened a provider report naming our delivery id, whose delivery is not
 * remembered, is taken for one that beat its SENT event (a consumer backlog during a large
 * broadcast) and answered "retry later"; older, it is for a delivery forgotten or never sent.
 */
export const NOT_YET_WINDOW_MS = 15 * 60_000;

/**
 * The inbound use cases: what comes back after sending. Bounces (to a VERP return path)
 * and feedback-loop complaints suppress the address and publish BOUNCED/COMPLAINED;
 * a List-Unsubscribe mailto unsubscribes as the one-click POST does. A delivery we do
 * not know (yet) fails the message temporarily, so the sending MTA tries again later.
 */
export class InboundMail {
  constructor(private readonly deps: InboundDeps) {}

  /**
   * The mailbox an RCPT TO reaches; undefined: not ours (refused at RCPT). What comes back
   * after sending first (return paths, unsubscribes, feedback loops), then received mail.
   */
  mailboxOf(address: string): Mailbox | undefined {
    const mailbox = mailboxOf(address, this.deps.policy);
    if (mailbox) return mailbox;
    const route = this.deps.receiver?.routeOf(address);
    return route && { kind: "received", route };
  }

  /** Remembers a delivery the relay accepted (from its SENT event). */
  rememberSent(delivery: SentDelivery): Promise<void> {
    return this.deps.sent.remember(delivery);
  }

  async receive(envelope: Envelope, raw: Uint8Array | string): Promise<Outcome[]> {
    const all = envelope.rcptTo.map((a) => this.mailboxOf(a)).filter((m): m is Mailbox => !!m);
    const received = all.filter((m): m is Mailbox & { kind: "received" } => m.kind === "received");
    const outcomes: Outcome[] = [];
    if (received.length && this.deps.receiver) {
      const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
      outcomes.push(...(await this.deps.receiver.receive(envelope, bytes, received.map((m) => m.route))));
    }
    const mailboxes = dedupe(all.filter((m): m is Exclude<Mailbox, { kind: "received" }> => m.kind !== "received"));
    if (!mailboxes.length) return outcomes;
    let message: ReadMessage;
    try {
      message = await readMessage(raw);
    } catch (err) {
      // Beyond the parser's limits (nesting, header size): retrying would not help.
      this.deps.logger.warn({ err, mailFrom: envelope.mailFrom }, "unreadable inbound message dropped");
      return [...outcomes, ignored("unreadable message")];
    }
    const handled: Outcome[] = [];
    for (const mailbox of mailboxes) handled.push(await this.handle(mailbox, message));
    for (const outcome of handled) this.deps.logger.info({ ...outcome, mailFrom: envelope.mailFrom }, "inbound mail handled");
    return [...outcomes, ...handled];
  }

  /**
   * What a relay provider reported by its event webhook (DESIGN §9.7): the same bounce and
   * complaint handling as a DSN or an ARF report (same event ids, so a redelivered webhook is
   * one event), and DELIVERED when the recipient's server took the message. A report naming
   * no delivery we remember is ignored, not refused: the provider would retry it forever.
   */
  async providerReport(report: ProviderReport): Promise<Outcome> {
    const outcome = await this.handleProviderReport(report);
    this.deps.logger.info({ ...outcome, provider: report.provider }, "provider report handled");
    return outcome;
  }

  private async handleProviderReport(report: ProviderReport): Promise<Outcome> {
    if (report.kind === "ignored") return ignored(report.reason);
    const delivery =
      (report.deliveryId ? await this.deps.sent.find(report.deliveryId) : null) ??
      (report.messageId ? await this.deps.sent.findByMessageId(report.messageId) : null);
    if (!delivery) {
      // Only our delivery id (never another system's mail through the same provider account) is waited for.
      const age = report.occurredAt ? this.deps.clock.now().getTime() - report.occurredAt.getTime() : Infinity;
      if (report.deliveryId && age < NOT_YET_WINDOW_MS) return { kind: "not-yet", deliveryId: report.deliveryId };
      const named = report.deliveryId || report.messageId;
      return ignored(named ? `${report.provider} report for ${named}, which names no delivery remembered here` : `${report.provider} report that names no delivery`);
    }
    switch (report.kind) {
      case "bounce":
        return this.bounce(delivery, {
          action: "failed",
          status: report.status,
          permanent: report.permanent,
          smtpCode: report.smtpCode,
          diagnostic: report.diagnostic,
          finalRecipient: report.recipient,
          originalRecipient: "",
        });
      case "complaint":
        return this.complaint(delivery, report.feedbackType || "abuse", report.userAgent, report.recipient);
      case "delivered":
        return this.delivered(delivery, report);
      case "deferred":
        return this.deferred(delivery, report);
    }
  }

  private async handle(mailbox: Exclude<Mailbox, { kind: "received" }>, message: ReadMessage): Promise<Outcome> {
    switch (mailbox.kind) {
      case "return-path":
        return this.report(message, classify(message), mailbox.deliveryId);
      case "reports":
        return this.report(message, classify(message), undefined);
      case "unsubscribe":
        return this.unsubscribe(mailbox.token);
      case "unsubscribe-by-subject": {
        const token = unsubscribeTokenInSubject(message.subject);
        return token ? this.unsubscribe(token) : ignored("unsubscribe mail without a token in its subject");
      }
      case "srs":
        // A bounce of a forwarded message (DESIGN §10.4), taken so the next hop stops retrying and
        // dropped: the forward's own delivery already recorded what the next hop answered it.
        return ignored("bounce of a forwarded message (SRS return path)");
    }
  }

  private async report(message: ReadMessage, finding: Finding, returnPathDeliveryId: string | undefined): Promise<Outcome> {
    switch (finding.kind) {
      case "bounce": {
        // A DSN to a fixed mailbox may still quote our correlation header.
        const deliveryId = returnPathDeliveryId ?? message.originalHeaders?.get(DELIVERY_ID_HEADER)?.trim();
        if (!deliveryId) return ignored("bounce that names no delivery of ours");
        return this.bounce(await this.delivery(deliveryId), finding.verdict);
      }
      case "complaint": {
        const fromReturnPath = finding.returnPath ? verpDeliveryOf(this.deps.policy.secret, finding.returnPath)?.deliveryId : undefined;
        const deliveryId = finding.deliveryId || fromReturnPath || returnPathDeliveryId;
        if (!deliveryId) return ignored("complaint that names no delivery of ours");
        return this.complaint(await this.delivery(deliveryId), finding.feedbackType, finding.userAgent, finding.reportedRecipient);
      }
      case "no-failure":
        return ignored(`delivery status "${finding.action}" ${finding.status}`.trim());
      case "ignored":
        return ignored(finding.reason);
    }
  }

  private async delivery(deliveryId: string): Promise<SentDelivery> {
    const delivery = await this.deps.sent.find(deliveryId);
    if (!delivery) {
      // Its SENT event may not have reached us yet: the sender's MTA retries later.
      throw appError({ code: "unknown_delivery", httpStatus: 503, message: `no sent delivery ${deliveryId} (yet)` });
    }
    return delivery;
  }

  private async bounce(delivery: SentDelivery, verdict: BounceVerdict): Promise<Outcome> {
    const detail = verdict.diagnostic || (verdict.status ? `status ${verdict.status}` : "bounced");
    const other = otherRecipientNamed(delivery, [verdict.originalRecipient, verdict.finalRecipient]);
    if (other) {
      // A cc or bcc of the message bounced: that address is suppressed when the failure is
      // final; the email's own status follows its `to`, so no bounce event of the email.
      if (verdict.permanent) await this.deps.suppressions.suppress(delivery.workspaceId, other, "hard_bounce", `${verdict.status} ${detail}`.trim());
      const kind = verdict.permanent ? "hard-bounce" : "soft-bounce";
      return { kind, deliveryId: delivery.deliveryId, recipient: other, status: verdict.status };
    }
    if (verdict.permanent) {
      await this.deps.suppressions.suppress(delivery.workspaceId, delivery.recipient, "hard_bounce", `${verdict.status} ${detail}`.trim());
    }
    await this.deps.events.publish(
      this.eventOf(delivery, "bounced", [verdict.action, verdict.status, String(verdict.permanent)], {
        detail,
        smtpCode: verdict.smtpCode,
        permanent: verdict.permanent,
        enhancedStatus: verdict.status,
      }),
    );
    const kind = verdict.permanent ? "hard-bounce" : "soft-bounce";
    return { kind, deliveryId: delivery.deliveryId, recipient: delivery.recipient, status: verdict.status };
  }

  private async complaint(delivery: SentDelivery, feedbackType: string, userAgent: string, reportedRecipient: string): Promise<Outcome> {
    const detail = `feedback-type ${feedbackType}${userAgent ? ` from ${userAgent}` : ""}`;
    const other = otherRecipientNamed(delivery, [reportedRecipient]);
    if (other) {
      // A cc or bcc complained: that address is suppressed; the email's own status and
      // events follow its `to`, as for a cc's bounce. A report that names nobody (many
      // feedback loops redact the recipient) is taken as the `to`'s.
      await this.deps.suppressions.suppress(delivery.workspaceId, other, "complaint", detail);
      return { kind: "complaint", deliveryId: delivery.deliveryId, recipient: other, feedbackType };
    }
    await this.deps.suppressions.suppress(delivery.workspaceId, delivery.recipient, "complaint", detail);
    await this.deps.events.publish(this.eventOf(delivery, "complained", [feedbackType], { detail }));
    return { kind: "complaint", deliveryId: delivery.deliveryId, recipient: delivery.recipient, feedbackType };
  }

  /** The recipient's own server took the message: DELIVERED confirms the SENT (the relay's 250). */
  private async delivered(delivery: SentDelivery, report: ProviderReport & { kind: "delivered" }): Promise<Outcome> {
    // A cc's or bcc's delivery: the email's status and events follow its `to`.
    if (otherRecipientNamed(delivery, [report.recipient])) return ignored(`delivery to another recipient of ${delivery.deliveryId}`);
    await this.deps.events.publish(
      this.eventOf(delivery, "delivered", [], { detail: report.detail || `delivered, reported by ${report.provider}`, smtpCode: report.smtpCode }),
    );
    return { kind: "delivered", deliveryId: delivery.deliveryId, recipient: delivery.recipient };
  }

  /**
   * The provider's attempt failed temporarily and it retries (Mailgun's temporary failure,
   * SES's DeliveryDelay, SendGrid's deferred): DEFERRED, as delivery's own 4xx publishes it
   * (timeline, EMAIL_DEFERRED), never a bounce: the message may still arrive.
   */
  private async deferred(delivery: SentDelivery, report: ProviderReport & { kind: "deferred" }): Promise<Outcome> {
    if (otherRecipientNamed(delivery, [report.recipient])) return ignored(`deferral for another recipient of ${delivery.deliveryId}`);
    const detail = `${report.diagnostic || "delivery delayed"} (${report.provider} retries)`;
    // Each attempt is its own deferral; a redelivered webhook of the same attempt is one event.
    const attempt = [report.occurredAt?.toISOString() ?? "", report.status, report.diagnostic];
    await this.deps.events.publish(
      this.eventOf(delivery, "deferred", attempt, { detail, smtpCode: report.smtpCode, enhancedStatus: report.status }),
    );
    return { kind: "deferred", deliveryId: delivery.deliveryId, recipient: delivery.recipient };
  }

  /** What the gateway's one-click POST does: suppression, contact unsubscribed, UNSUBSCRIBED event. */
  private async unsubscribe(token: string): Promise<Outcome> {
    const r = parseRecipientToken(this.deps.policy.secret, token);
    if (!r) return ignored("unsubscribe mail with an invalid token");
    await this.deps.suppressions.suppress(r.workspaceId, r.email, "unsubscribed", `unsubscribed from ${r.contentId} by mail`);
    // The suppression is what guards sends; the contact's flag is for display.
    await this.deps.suppressions.markUnsubscribed(r.workspaceId, r.email).catch((err) => {
      this.deps.logger.warn({ err, workspaceId: r.workspaceId }, "contact not marked unsubscribed");
    });
    const broadcast = r.contentId.startsWith("cmp_");
    await this.deps.events.publish({
      ...blankEvent(this.deps.clock.now()),
      // Format-3 tokens carry no Message-ID: the content id names the message.
      eventId: eventId(["unsubscribed", r.messageId || r.contentId, r.email.toLowerCase(), "mailto"]),
      type: "unsubscribed",
      workspaceId: r.workspaceId,
      source: r.testSend ? "test" : broadcast ? "broadcast" : "transactional",
      emailId: r.contentId.startsWith("trs_") ? r.contentId : "",
      broadcastId: broadcast ? r.contentId : "",
      messageId: r.messageId,
      recipient: r.email,
      contactId: r.contactId,
      detail: "unsubscribed by mail (List-Unsubscribe mailto)",
    });
    return { kind: "unsubscribed", workspaceId: r.workspaceId, recipient: r.email };
  }

  private eventOf(
    delivery: SentDelivery,
    type: InboundEvent["type"],
    discriminators: string[],
    fields: Partial<InboundEvent>,
  ): InboundEvent {
    return {
      ...blankEvent(this.deps.clock.now()),
      eventId: eventId([type, delivery.deliveryId, ...discriminators]),
      type,
      workspaceId: delivery.workspaceId,
      source: delivery.source,
      deliveryId: delivery.deliveryId,
      emailId: delivery.emailId,
      broadcastId: delivery.broadcastId,
      messageId: delivery.messageId,
      recipient: delivery.recipient,
      contactId: delivery.contactId,
      groupBy: delivery.groupBy,
      ...(delivery.tags?.length ? { tags: delivery.tags } : {}),
      ...(delivery.route ? { route: delivery.route } : {}),
      ...fields,
    };
  }
}

/**
 * The cc or bcc address a bounce report names, when it names one of the message's other
 * recipients rather than its `to` (the report's Original-Recipient, else Final-Recipient).
 */
function otherRecipientNamed(delivery: SentDelivery, namedInReport: string[]): string | undefined {
  const others = delivery.otherRecipients ?? [];
  if (!others.length) return undefined;
  const bare = (a: string) => a.trim().replace(/^<(.*)>$/, "$1").toLowerCase();
  const to = bare(delivery.recipient);
  for (const named of namedInReport.map(bare).filter(Boolean)) {
    if (named === to) return undefined;
    const match = others.find((o) => bare(o) === named);
    if (match) return match;
  }
  return undefined;
}

function blankEvent(occurredAt: Date): Omit<InboundEvent, "eventId" | "type" | "workspaceId" | "source"> {
  return {
    deliveryId: "", emailId: "", broadcastId: "", messageId: "", recipient: "", contactId: "", groupBy: "",
    detail: "", smtpCode: 0, permanent: false, enhancedStatus: "", occurredAt,
  };
}

const ignored = (reason: string): Outcome => ({ kind: "ignored", reason });

function dedupe<M extends Mailbox>(mailboxes: M[]): M[] {
  const seen = new Set<string>();
  return mailboxes.filter((m) => {
    const key = JSON.stringify(m);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
