import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  AttachmentInfoSchema,
  type AttachmentInfo as ProtoAttachmentInfo,
  BatchFailureSchema,
  EmailOutcomesSchema,
  EmailRecordSchema,
  StatsCountersSchema,
  type EmailOutcomes as ProtoOutcomes,
  type StatsCounters as ProtoCounters,
  EmailService,
  EmailStatus as ProtoStatus,
  type EmailInput,
  type EmailRecord as ProtoRecord,
} from "@mailroom/proto/email/v1/email_pb.js";
import { CompiledMessageSchema } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { AppError, badRequest, toErrorInfo } from "@mailroom/kit/errors.js";
import { actorOfHeaders } from "@mailroom/kit/audit.js";
import { requestIdOfCall } from "@mailroom/kit/connect.js";
import { currentTraceparent } from "@mailroom/kit/tracing.js";
import type { AttachmentInfo, EmailOutcomes, EmailRecord, EmailRequest, EmailStatus } from "./domain/model.js";
import type { StatsCounters } from "./domain/ports.js";
import { assertBatchSize, type Emails } from "./domain/service.js";

const STATUS: Record<EmailStatus, ProtoStatus> = {
  SCHEDULED: ProtoStatus.SCHEDULED,
  SENT: ProtoStatus.SENT,
  DELIVERED: ProtoStatus.DELIVERED,
  FAILED: ProtoStatus.FAILED,
  CANCELLED: ProtoStatus.CANCELLED,
};

const STATUS_OF = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Partial<Record<ProtoStatus, EmailStatus>>;

const orUndefined = (s: string) => (s === "" ? undefined : s);

/** Proto in -> domain request. */
export function requestOf(input: EmailInput | undefined): EmailRequest {
  if (!input) throw badRequest("invalid_payload", "email is required");
  const base = {
    to: input.to,
    settings: { trackClicks: input.settings?.trackClicks, trackOpens: input.settings?.trackOpens },
    groupBy: orUndefined(input.groupBy),
    sendAt: input.sendAt ? timestampDate(input.sendAt) : undefined,
    idempotencyKey: orUndefined(input.idempotencyKey),
    // The list supersedes the raw form's single field (kept for older callers).
    replyTo: input.replyTo.length ? input.replyTo : input.content.case === "raw" && input.content.value.replyTo ? [input.content.value.replyTo] : undefined,
    cc: input.cc.length ? input.cc : undefined,
    bcc: input.bcc.length ? input.bcc : undefined,
    headers: input.headers.length ? input.headers.map((h) => ({ name: h.name, value: h.value })) : undefined,
    attachments: input.attachments.length
      ? input.attachments.map((a) => ({
          filename: a.filename,
          content: a.content,
          contentType: orUndefined(a.contentType),
          contentId: orUndefined(a.contentId),
        }))
      : undefined,
    tags: input.tags.length ? input.tags.map((t) => ({ name: t.name, value: t.value })) : undefined,
    automation: input.automation || undefined,
  };
  const content = input.content;
  if (content.case === "raw") {
    const raw = content.value;
    return {
      ...base,
      content: {
        kind: "raw",
        from: raw.from,
        fromName: orUndefined(raw.fromName),
        subject: raw.subject,
        html: raw.html,
        text: orUndefined(raw.text),
        previewText: orUndefined(raw.previewText),
        contactProperties: raw.contactProperties as Record<string, unknown> | undefined,
        ...(raw.asGiven ? { asGiven: true as const } : {}),
      },
    };
  }
  if (content.case === "templated") {
    return {
      ...base,
      content: { kind: "templated", template: content.value.template, variables: (content.value.variables ?? {}) as Record<string, unknown> },
    };
  }
  if (content.case === "forwarded") {
    // The inbound unit's forward (the gateway never builds this case).
    const f = content.value;
    return {
      ...base,
      content: { kind: "forwarded", raw: f.raw, envelopeFrom: f.envelopeFrom, ...(f.receivedId ? { receivedId: f.receivedId } : {}) },
    };
  }
  throw badRequest("invalid_payload", "An email needs either raw content (from, subject, html) or a template");
}

/** Domain record -> proto. */
export function protoRecord(record: EmailRecord): ProtoRecord {
  return create(EmailRecordSchema, {
    id: record.id,
    messageId: record.messageId,
    status: STATUS[record.status],
    to: record.to,
    type: record.type,
    from: record.from ?? "",
    subject: record.subject ?? "",
    template: record.template ?? "",
    groupBy: record.groupBy ?? "",
    sendAt: record.sendAt ? timestampFromDate(new Date(record.sendAt)) : undefined,
    createdAt: timestampFromDate(new Date(record.createdAt)),
    updatedAt: timestampFromDate(new Date(record.updatedAt)),
    statusReason: record.statusReason ?? "",
    outcomes: record.outcomes ? protoOutcomes(record.outcomes) : undefined,
    sentAt: record.sentAt ? timestampFromDate(new Date(record.sentAt)) : undefined,
    cc: record.cc ?? [],
    bcc: record.bcc ?? [],
    headers: record.headers ?? [],
    attachments: (record.attachments ?? []).map(protoAttachmentInfo),
    tags: record.tags ?? [],
    suppressed: record.suppressed ?? [],
    sentBy: record.sentBy ?? "",
  });
}

function protoAttachmentInfo(a: AttachmentInfo): ProtoAttachmentInfo {
  return create(AttachmentInfoSchema, { filename: a.filename, contentType: a.contentType, size: BigInt(a.size), contentId: a.contentId ?? "" });
}

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

function protoOutcomes(o: EmailOutcomes): ProtoOutcomes {
  return create(EmailOutcomesSchema, {
    opens: o.opens,
    clicks: o.clicks,
    firstOpenedAt: ts(o.firstOpenedAt),
    lastOpenedAt: ts(o.lastOpenedAt),
    firstClickedAt: ts(o.firstClickedAt),
    lastClickedAt: ts(o.lastClickedAt),
    deliveredAt: ts(o.deliveredAt),
    bouncedAt: ts(o.bouncedAt),
    bounceType: o.bounceType ?? "",
    failedAt: ts(o.failedAt),
    complainedAt: ts(o.complainedAt),
    unsubscribedAt: ts(o.unsubscribedAt),
    links: o.links.map((l) => ({ url: l.url, clicks: l.clicks, lastClickedAt: ts(l.lastClickedAt) })),
    lastEvent: o.lastEvent?.type ?? "",
    lastEventAt: ts(o.lastEvent?.at),
    route: o.route ?? "",
    deliveredRoute: o.deliveredRoute ?? "",
    bouncedRoute: o.bouncedRoute ?? "",
    failedRoute: o.failedRoute ?? "",
    deferrals: o.deferrals ?? 0,
    lastDeferredAt: ts(o.lastDeferral?.at),
    lastDeferredRoute: o.lastDeferral?.route ?? "",
    lastDeferredDetail: o.lastDeferral?.detail ?? "",
    confirmedAt: ts(o.confirmed?.at),
    confirmedRoute: o.confirmed?.route ?? "",
    replies: o.replies ?? 0,
    lastRepliedAt: ts(o.lastReply?.at),
    lastReplyId: o.lastReply?.receivedId ?? "",
  });
}

const protoCounters = (c: StatsCounters): ProtoCounters => create(StatsCountersSchema, {
  sent: BigInt(c.sent),
  delivered: BigInt(c.delivered),
  bounced: BigInt(c.bounced),
  hardBounced: BigInt(c.hardBounced),
  failed: BigInt(c.failed),
  complained: BigInt(c.complained),
  opened: BigInt(c.opened),
  clicked: BigInt(c.clicked),
  unsubscribed: BigInt(c.unsubscribed),
  opens: BigInt(c.opens),
  clicks: BigInt(c.clicks),
});

/**
 * The Connect EmailService: proto in, proto out, no business rules. Domain refusals are
 * AppErrors, which kit's interceptor turns into ConnectErrors with ErrorInfo; only a
 * batch's per-item failures are carried here, as ErrorInfo in the response.
 */
export function emailRoutes(service: Emails) {
  return (router: ConnectRouter) =>
    router.service(EmailService, {
      sendEmail: async (req, ctx) => ({ email: protoRecord(await service.send(req.workspaceId, requestOf(req.email), { requestId: requestIdOfCall(ctx), traceparent: currentTraceparent(), sentBy: actorOfHeaders(ctx.requestHeader) })) }),

      sendBatch: async (req, ctx) => {
        assertBatchSize(req.emails.length);
        const requests: EmailRequest[] = [];
        const invalid: Array<{ index: number; to: string; error: AppError }> = [];
        // An item the proto cannot express as an email fails alone, like any invalid item.
        const positions: number[] = [];
        req.emails.forEach((input, index) => {
          try {
            requests.push(requestOf(input));
            positions.push(index);
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            invalid.push({ index, to: input.to, error: err });
          }
        });
        const result = requests.length ? await service.sendBatch(req.workspaceId, requests, { independent: req.independent, requestId: requestIdOfCall(ctx), traceparent: currentTraceparent(), sentBy: actorOfHeaders(ctx.requestHeader) }) : { successful: [], failed: [] };
        const failed = [...invalid, ...result.failed.map((f) => ({ ...f, index: positions[f.index] }))].sort((a, b) => a.index - b.index);
        return {
          successful: result.successful.map(protoRecord),
          failed: failed.map((f) => create(BatchFailureSchema, { index: f.index, to: f.to, error: toErrorInfo(f.error.toInit()) })),
        };
      },

      getEmail: async (req) => ({ email: protoRecord(await service.get(req.workspaceId, req.id)) }),

      cancelEmail: async (req) => ({ email: protoRecord(await service.cancel(req.workspaceId, req.id)) }),

      getStats: async (req) => {
        const stats = await service.stats(req.workspaceId, { from: req.from, to: req.to, groupBy: req.groupBy, tags: req.tags });
        return {
          from: stats.from,
          to: stats.to,
          totals: protoCounters(stats.totals),
          days: stats.days.map((d) => ({ date: d.date, counters: protoCounters(d.counters) })),
          groups: stats.groups.map((g) => ({ groupBy: g.groupBy, counters: protoCounters(g.counters) })),
        };
      },

      listEmails: async (req) => {
        const statuses = req.statuses.map((s) => {
          const status = STATUS_OF[s];
          if (!status) throw badRequest("invalid_request", `unknown status ${s}`);
          return status;
        });
        const page = await service.list(req.workspaceId, {
          recipient: req.recipient,
          recipientExact: req.recipientExact,
          tags: req.tags,
          statuses,
          groupBy: req.groupBy,
          createdFrom: req.createdFrom ? timestampDate(req.createdFrom) : undefined,
          createdTo: req.createdTo ? timestampDate(req.createdTo) : undefined,
          limit: req.limit,
          cursor: req.cursor || undefined,
        });
        return { emails: page.emails.map(protoRecord), nextCursor: page.nextCursor ?? "" };
      },

      eraseRecipient: async (req) => ({ emailsErased: BigInt(await service.eraseRecipient(req.workspaceId, req.email)) }),

      getEmailAttachment: async (req) => {
        const { info, content } = await service.attachment(req.workspaceId, req.id, req.index);
        return { attachment: protoAttachmentInfo(info), content };
      },

      // The compiled content is opaque to the domain: it is decoded only here, for the wire.
      getEmailContent: async (req) => ({
        compiled: fromBinary(CompiledMessageSchema, await service.compiledContent(req.workspaceId, req.id)),
      }),
    });
}
