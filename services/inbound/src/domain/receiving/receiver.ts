import { createHash } from "node:crypto";
import { AppError, appError } from "@mailroom/kit/errors.js";
import { eventId } from "../event-id.js";
import type { Envelope, SentDelivery } from "../model.js";
import type {
  Clock, DmarcReports, Forwarder, Logger, MailEvents, ReceivedContents, ReceivedEmailStore, SentDeliveries, SpamScorer, WebhookEvents,
} from "../ports.js";
import { parseReceived, type ParsedMessage } from "./message.js";
import type { InboundRoute, ReceivedAttachmentInfo, ReceivedDetails, ReceivedEmailRecord, ReceivedListQuery, RuleRoute } from "./model.js";
import type { InboundRouting } from "./routing.js";

export interface ReceiverDeps {
  routing: InboundRouting;
  received: ReceivedEmailStore;
  contents: ReceivedContents;
  sent: SentDeliveries;
  events: MailEvents;
  webhooks: WebhookEvents;
  forwarder?: Forwarder;
  dmarc?: DmarcReports;
  spam?: SpamScorer;
  clock: Clock;
  logger: Logger;
}

export type ReceiveOutcome =
  | { kind: "received"; id: string; workspaceId: string; action: string; repliedTo?: string }
  /** Received (and handled) before: a redelivery after a lost 250. */
  | { kind: "duplicate"; id: string; workspaceId: string }
  | { kind: "dmarc-report" }
  | { kind: "ignored"; reason: string };

/** Details up to this size (JSON) stay in the record; larger, they go to the object store. */
const INLINE_DETAILS_BYTES = 256 * 1024;
/** In-Reply-To and References ids looked up at most, newest first. */
const MAX_REPLY_LOOKUPS = 20;

export const EMAIL_RECEIVED = "EMAIL_RECEIVED";

export const receivedNotFound = (id: string) => appError({ code: "received_email_not_found", httpStatus: 404, message: `No received email ${id} in this workspace` });

/** Object names: `<workspace>/<rcv id>/raw`, `/<att id>`, `/details`. */
export const objectName = (workspaceId: string, id: string, part: string) => `${workspaceId}/${id}/${part}`;

/**
 * Receiving (DESIGN §10.4): a message to an inbound domain's rule is parsed, its raw bytes and
 * attachments written to the object store, recorded as `rcv_…`, matched to the message of ours
 * it answers (REPLIED), and handed to its rule's action (EMAIL_RECEIVED, a forward, or kept).
 * Recipients of several workspaces (or rules) make one record each. The record's id is derived
 * from the message, so the sending MTA's retry after a failure (451) completes the same record
 * and a redelivery after success changes nothing.
 */
export class Receiver {
  constructor(private readonly deps: ReceiverDeps) {}

  /** Where an RCPT TO goes: the DMARC report mailbox first, then a verified domain's rules; undefined: refused. */
  routeOf(address: string): InboundRoute | undefined {
    if (this.deps.dmarc?.isReportMailbox(address)) return { kind: "dmarc", address };
    return this.deps.routing.routeOf(address);
  }

  async receive(envelope: Envelope, raw: Uint8Array, routes: InboundRoute[]): Promise<ReceiveOutcome[]> {
    if (!routes.length) return [];
    let message: ParsedMessage;
    try {
      message = await parseReceived(raw);
    } catch (err) {
      // Beyond the parser's limits (nesting, header size): retrying would not help.
      this.deps.logger.warn({ err, mailFrom: envelope.mailFrom }, "unreadable received message dropped");
      return [{ kind: "ignored", reason: "unreadable message" }];
    }
    const outcomes: ReceiveOutcome[] = [];
    if (routes.some((r) => r.kind === "dmarc") && this.deps.dmarc) {
      await this.deps.dmarc.receive(raw, message.parsed);
      outcomes.push({ kind: "dmarc-report" });
    }
    const groups = groupRoutes(routes.filter((r): r is RuleRoute => r.kind === "rule"));
    if (!groups.length) return outcomes;
    const spamScore = await this.spamScore(raw);
    for (const group of groups) outcomes.push(await this.receiveFor(group, envelope, raw, message, spamScore));
    return outcomes;
  }

  private async receiveFor(group: RouteGroup, envelope: Envelope, raw: Uint8Array, message: ParsedMessage, spamScore: number | undefined): Promise<ReceiveOutcome> {
    const { route, envelopeTo } = group;
    const { workspaceId } = route;
    const id = receivedIdOf(workspaceId, message.messageId || sha256(raw), envelope.mailFrom, envelopeTo);
    const existing = await this.deps.received.find(workspaceId, id);
    if (existing?.done) return { kind: "duplicate", id, workspaceId };

    const attachments: ReceivedAttachmentInfo[] = message.attachments.map((a, i) => ({
      id: `att_${i + 1}`, filename: a.filename, contentType: a.contentType, size: a.content.byteLength, contentId: a.contentId, disposition: a.disposition,
    }));
    const details = message.details;
    const detailsJson = JSON.stringify(details);
    const detailsInObject = Buffer.byteLength(detailsJson) > INLINE_DETAILS_BYTES;
    await Promise.all([
      this.deps.contents.put(objectName(workspaceId, id, "raw"), raw),
      ...message.attachments.map((a, i) => this.deps.contents.put(objectName(workspaceId, id, attachments[i].id), a.content)),
      ...(detailsInObject ? [this.deps.contents.put(objectName(workspaceId, id, "details"), new TextEncoder().encode(detailsJson))] : []),
    ]);

    const answered = await this.answeredDelivery(workspaceId, message);
    const shown = new Set(message.to.concat(message.cc).map((a) => a.address.toLowerCase()));
    const record: ReceivedEmailRecord = {
      id,
      workspaceId,
      domainId: route.domainId,
      from: message.from,
      // The header recipients, then the envelope recipients the header does not show (a Bcc).
      to: [...message.to, ...envelopeTo.filter((a) => !shown.has(a.toLowerCase())).map((address) => ({ address, name: "" }))],
      cc: message.cc,
      envelopeTo,
      mailFrom: envelope.mailFrom,
      subject: message.subject,
      messageId: message.messageId,
      inReplyToHeader: message.inReplyTo,
      references: message.references,
      ...(answered ? { inReplyTo: { emailId: answered.emailId, broadcastId: answered.broadcastId, contactId: answered.contactId } } : {}),
      mailboxHash: route.mailboxHash,
      receivedAt: existing?.receivedAt ?? this.deps.clock.now(),
      attachments,
      ...(spamScore !== undefined ? { spamScore } : {}),
      size: raw.byteLength,
      ruleId: route.ruleId,
      action: route.action,
      forwardedEmailId: existing?.forwardedEmailId ?? "",
      // Kept only, answering nothing: nothing is left to do once it is saved (one write, not two).
      done: route.action === "store" && !answered,
      ...(detailsInObject ? { detailsInObject: true } : {}),
    };
    await this.deps.received.save(record, detailsInObject ? null : details);

    if (answered) await this.deps.events.publish(repliedEvent(answered, record));
    if (route.action === "webhook") await this.deps.webhooks.publish(emailReceivedEvent(record));
    if (route.action === "forward" && !record.forwardedEmailId) record.forwardedEmailId = await this.forward(record, route, raw);
    if (!record.done) await this.deps.received.markDone(workspaceId, id, record.forwardedEmailId);
    this.deps.logger.info({ id, workspaceId, action: route.action, size: record.size, repliedTo: answered?.deliveryId }, "inbound email received");
    return { kind: "received", id, workspaceId, action: route.action, ...(answered ? { repliedTo: answered.deliveryId } : {}) };
  }

  /**
   * The delivery of ours the message answers: In-Reply-To, then References newest first, each
   * looked up among the remembered SENT deliveries (stored without angle brackets; an id with
   * them is tried too). Only a delivery of the same workspace counts: another tenant's message
   * ids say nothing to this one.
   */
  private async answeredDelivery(workspaceId: string, message: ParsedMessage): Promise<SentDelivery | undefined> {
    const ids = [...new Set([message.inReplyTo, ...[...message.references].reverse()].filter(Boolean))].slice(0, MAX_REPLY_LOOKUPS);
    for (const id of ids) {
      const delivery = (await this.deps.sent.findByMessageId(id)) ?? (await this.deps.sent.findByMessageId(`<${id}>`));
      if (delivery?.workspaceId === workspaceId) return delivery;
    }
    return undefined;
  }

  /** The forward's email id; "" when the send path refused it for good (logged: a retry would not help). */
  private async forward(record: ReceivedEmailRecord, route: RuleRoute, raw: Uint8Array): Promise<string> {
    if (!this.deps.forwarder) {
      this.deps.logger.warn({ id: record.id, workspaceId: record.workspaceId }, "forward rule, but forwarding is not configured; kept only");
      return "";
    }
    try {
      const { emailId } = await this.deps.forwarder.forward({ workspaceId: record.workspaceId, receivedId: record.id, to: route.forwardTo, mailFrom: record.mailFrom, raw });
      return emailId;
    } catch (err) {
      if (!isPermanent(err)) throw err;
      this.deps.logger.warn({ err, id: record.id, workspaceId: record.workspaceId }, "forward refused by the send path; kept only");
      return "";
    }
  }

  /** Never fails the receipt: a scorer that is absent, busy or broken gives no score. */
  private async spamScore(raw: Uint8Array): Promise<number | undefined> {
    if (!this.deps.spam) return undefined;
    try {
      return await this.deps.spam.score(raw);
    } catch (err) {
      this.deps.logger.warn({ err }, "spam scoring failed; received without a score");
      return undefined;
    }
  }

  // --- reading (every call scoped to the workspace) --------------------------------------

  async list(workspaceId: string, query: ReceivedListQuery): Promise<ReceivedEmailRecord[]> {
    return this.deps.received.list(workspaceId, query);
  }

  async get(workspaceId: string, id: string): Promise<{ email: ReceivedEmailRecord; details: ReceivedDetails }> {
    const email = await this.deps.received.find(workspaceId, id);
    if (!email) throw receivedNotFound(id);
    const details = email.detailsInObject
      ? JSON.parse(new TextDecoder().decode(await this.readAll(objectName(workspaceId, id, "details")))) as ReceivedDetails
      : await this.deps.received.details(workspaceId, id);
    return { email, details: details ?? { text: "", html: "", strippedTextReply: "", headers: [] } };
  }

  /** The attachment's metadata and bytes; 404 when the email, the attachment or its object is gone. */
  async attachment(workspaceId: string, emailId: string, attachmentId: string): Promise<{ info: ReceivedAttachmentInfo; data: AsyncIterable<Uint8Array> }> {
    const email = await this.deps.received.find(workspaceId, emailId);
    if (!email) throw receivedNotFound(emailId);
    const info = email.attachments.find((a) => a.id === attachmentId);
    const data = info && (await this.deps.contents.get(objectName(workspaceId, emailId, info.id)));
    if (!info || !data) throw appError({ code: "received_attachment_not_found", httpStatus: 404, message: `Received email ${emailId} has no attachment ${attachmentId}` });
    return { info, data };
  }

  async raw(workspaceId: string, emailId: string): Promise<{ info: ReceivedAttachmentInfo; data: AsyncIterable<Uint8Array> }> {
    const email = await this.deps.received.find(workspaceId, emailId);
    const data = email && (await this.deps.contents.get(objectName(workspaceId, emailId, "raw")));
    if (!email || !data) throw receivedNotFound(emailId);
    return {
      info: { id: "raw", filename: `${emailId}.eml`, contentType: "message/rfc822", size: email.size, contentId: "", disposition: "attachment" },
      data,
    };
  }

  private async readAll(name: string): Promise<Uint8Array> {
    const data = await this.deps.contents.get(name);
    if (!data) throw appError({ code: "received_email_not_found", httpStatus: 404, message: "The received email's content is no longer kept" });
    const chunks: Uint8Array[] = [];
    for await (const c of data) chunks.push(c);
    return Buffer.concat(chunks);
  }
}

interface RouteGroup {
  route: RuleRoute;
  envelopeTo: string[];
}

/** Recipients reaching the same workspace, rule and tag make one record (one webhook, one forward). */
function groupRoutes(routes: RuleRoute[]): RouteGroup[] {
  const groups = new Map<string, RouteGroup>();
  for (const route of routes) {
    const key = `${route.workspaceId}\u0000${route.ruleId}\u0000${route.mailboxHash}`;
    const group = groups.get(key);
    if (!group) groups.set(key, { route, envelopeTo: [route.address] });
    else if (!group.envelopeTo.some((a) => a.toLowerCase() === route.address.toLowerCase())) group.envelopeTo.push(route.address);
  }
  return [...groups.values()];
}

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");

/** The same message (Message-ID, else its bytes) from the same sender to the same recipients of a workspace: the same id. */
export function receivedIdOf(workspaceId: string, identity: string, mailFrom: string, envelopeTo: string[]): string {
  const rcpts = envelopeTo.map((a) => a.toLowerCase()).sort();
  return `rcv_${sha256([workspaceId, identity, mailFrom.toLowerCase(), ...rcpts].join("\u0000")).slice(0, 26)}`;
}

/** EMAIL_RECEIVED's data (DESIGN §10.4): attachments listed, never inlined. */
export function emailReceivedEvent(r: ReceivedEmailRecord) {
  const data: Record<string, unknown> = {
    id: r.id,
    from: r.from.address,
    to: r.to.map((a) => a.address),
    cc: r.cc.map((a) => a.address),
    subject: r.subject,
    messageId: r.messageId,
    receivedAt: r.receivedAt.toISOString(),
    attachments: r.attachments.map((a) => ({ id: a.id, filename: a.filename, contentType: a.contentType, size: a.size })),
  };
  if (r.mailboxHash) data.mailboxHash = r.mailboxHash;
  if (r.inReplyTo) {
    const { emailId, broadcastId, contactId } = r.inReplyTo;
    data.inReplyTo = { ...(emailId ? { emailId } : {}), ...(broadcastId ? { broadcastId } : {}), ...(contactId ? { contactId } : {}) };
  }
  if (r.spamScore !== undefined) data.spamScore = r.spamScore;
  return { eventId: eventId([EMAIL_RECEIVED, r.id]), type: EMAIL_RECEIVED, workspaceId: r.workspaceId, occurredAt: r.receivedAt, data };
}

/** REPLIED on the answered delivery's source: its ids, detail = the received email's id; one event per received email. */
function repliedEvent(d: SentDelivery, r: ReceivedEmailRecord) {
  return {
    eventId: eventId(["replied", r.id]),
    type: "replied" as const,
    workspaceId: d.workspaceId,
    source: d.source,
    deliveryId: d.deliveryId,
    emailId: d.emailId,
    broadcastId: d.broadcastId,
    messageId: d.messageId,
    recipient: d.recipient,
    contactId: d.contactId,
    groupBy: d.groupBy,
    detail: r.id,
    smtpCode: 0,
    permanent: false,
    enhancedStatus: "",
    occurredAt: r.receivedAt,
    ...(d.tags?.length ? { tags: d.tags } : {}),
    ...(d.route ? { route: d.route } : {}),
  };
}

/**
 * A refusal the send path will repeat on a retry: the Forwarder throws those as AppErrors with
 * a 4xx status (but 429); anything else means it is unavailable, and the MTA is asked to retry.
 */
function isPermanent(err: unknown): boolean {
  return err instanceof AppError && err.httpStatus >= 400 && err.httpStatus < 500 && err.httpStatus !== 429;
}
