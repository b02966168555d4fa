import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { appError } from "@mailroom/kit/errors.js";
import {
  ReceivingService,
  type GetDmarcSummaryRequest,
  type GetDmarcSummaryResponseSchema,
  type InboundDomainSchema,
  type InboundRuleSchema,
  type ReceivedEmailSchema,
} from "@mailroom/proto/inbound/v1/inbound_pb.js";
import type { InboundConfig } from "./domain/receiving/config.js";
import type { InboundDomainRecord, InboundRuleRecord, ReceivedAttachmentInfo, ReceivedDetails, ReceivedEmailRecord } from "./domain/receiving/model.js";
import type { Receiver } from "./domain/receiving/receiver.js";

/** GetDmarcSummary, provided by the DMARC code (domain/dmarc); absent, the RPC answers Unimplemented. */
export type DmarcSummaryHandler = (req: GetDmarcSummaryRequest, ctx: HandlerContext) => Promise<MessageInitShape<typeof GetDmarcSummaryResponseSchema>>;

export interface ReceivingRoutesDeps {
  config: InboundConfig;
  receiver: Receiver;
  dmarcSummary?: DmarcSummaryHandler;
}

const DEFAULT_PAGE = 25;
const MAX_PAGE = 100;

/**
 * Connect transport of ReceivingService (DESIGN §10.4): inbound domains and rules, received
 * emails and their bytes. Every call is scoped to its workspace_id (the gateway sets it from
 * the caller's key): another workspace's id is answered as not found. The streamed RPCs send
 * the object store's chunks as they come, the first carrying what they are.
 */
export function receivingRoutes(deps: ReceivingRoutesDeps) {
  const { config, receiver } = deps;
  return (router: ConnectRouter) => {
    router.service(ReceivingService, {
      async createInboundDomain(req) {
        return { domain: domainOut(await config.createDomain(workspace(req), req.domain), config) };
      },
      async listInboundDomains(req) {
        return { domains: (await config.listDomains(workspace(req))).map((d) => domainOut(d, config)) };
      },
      async getInboundDomain(req) {
        return { domain: domainOut(await config.getDomain(workspace(req), req.id), config) };
      },
      async verifyInboundDomain(req) {
        return { domain: domainOut(await config.verifyDomain(workspace(req), req.id), config) };
      },
      async deleteInboundDomain(req) {
        await config.deleteDomain(workspace(req), req.id);
        return {};
      },
      async createInboundRule(req) {
        const rule = await config.createRule(workspace(req), req.domainId, { match: req.match, action: req.action, forwardTo: req.forwardTo });
        return { rule: ruleOut(rule) };
      },
      async listInboundRules(req) {
        return { rules: (await config.listRules(workspace(req), req.domainId)).map(ruleOut) };
      },
      async deleteInboundRule(req) {
        await config.deleteRule(workspace(req), req.domainId, req.id);
        return {};
      },
      async listReceivedEmails(req) {
        const limit = req.limit === 0 ? DEFAULT_PAGE : req.limit;
        if (limit < 1 || limit > MAX_PAGE) throw appError({ code: "invalid_request", httpStatus: 400, message: `limit must be 1 to ${MAX_PAGE}` });
        const emails = await receiver.list(workspace(req), {
          limit: limit + 1,
          ...(req.to.trim() ? { to: req.to.trim() } : {}),
          ...(req.from.trim() ? { from: req.from.trim() } : {}),
          ...(req.since ? { since: timestampDate(req.since) } : {}),
          ...(req.cursor ? { after: parseCursor(req.cursor) } : {}),
        });
        const page = emails.slice(0, limit);
        const last = page[page.length - 1];
        return { emails: page.map((e) => emailOut(e)), nextCursor: emails.length > limit && last ? cursorOf(last) : "" };
      },
      async getReceivedEmail(req) {
        const { email, details } = await receiver.get(workspace(req), req.id);
        return { email: emailOut(email, details) };
      },
      async *getReceivedAttachment(req) {
        const { info, data } = await receiver.attachment(workspace(req), req.emailId, req.attachmentId);
        yield* chunks(info, data);
      },
      async *getReceivedRaw(req) {
        const { info, data } = await receiver.raw(workspace(req), req.emailId);
        yield* chunks(info, data);
      },
      async getDmarcSummary(req, ctx) {
        if (!deps.dmarcSummary) throw new ConnectError("DMARC summaries are not available on this server", Code.Unimplemented);
        workspace(req);
        return deps.dmarcSummary(req, ctx);
      },
    });
  };
}

function workspace(req: { workspaceId: string }): string {
  if (!req.workspaceId) throw appError({ code: "invalid_request", httpStatus: 400, message: "workspace_id is required" });
  return req.workspaceId;
}

async function* chunks(info: ReceivedAttachmentInfo, data: AsyncIterable<Uint8Array>): AsyncIterable<{ info?: ReturnType<typeof attachmentOut>; data: Uint8Array }> {
  let first = true;
  for await (const chunk of data) {
    yield first ? { info: attachmentOut(info), data: chunk } : { data: chunk };
    first = false;
  }
  if (first) yield { info: attachmentOut(info), data: new Uint8Array() };
}

/** Keyset cursor: the last row's receivedAt (ms) and id, base64url. */
function cursorOf(e: ReceivedEmailRecord): string {
  return Buffer.from(`${e.receivedAt.getTime()}:${e.id}`).toString("base64url");
}

function parseCursor(cursor: string): { receivedAt: Date; id: string } {
  const m = /^(\d{1,15}):(rcv_[a-z0-9]+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!m) throw appError({ code: "invalid_cursor", httpStatus: 400, message: "cursor is not one this API returned" });
  return { receivedAt: new Date(Number(m[1])), id: m[2] };
}

const ts = (d: Date | undefined) => (d ? timestampFromDate(d) : undefined);

function domainOut(d: InboundDomainRecord, config: InboundConfig): MessageInitShape<typeof InboundDomainSchema> {
  return {
    id: d.id,
    workspaceId: d.workspaceId,
    domain: d.domain,
    status: d.status,
    mxHost: config.mxHost,
    mxPriority: config.mxPriority,
    createdAt: ts(d.createdAt),
    verifiedAt: ts(d.verifiedAt),
    lastCheckedAt: ts(d.lastCheckedAt),
    failure: d.failure,
  };
}

function ruleOut(r: InboundRuleRecord): MessageInitShape<typeof InboundRuleSchema> {
  return { id: r.id, workspaceId: r.workspaceId, domainId: r.domainId, match: r.match, action: r.action, forwardTo: r.forwardTo, createdAt: ts(r.createdAt) };
}

function attachmentOut(a: ReceivedAttachmentInfo) {
  return { id: a.id, filename: a.filename, contentType: a.contentType, size: BigInt(a.size), contentId: a.contentId, disposition: a.disposition };
}

function emailOut(e: ReceivedEmailRecord, details?: ReceivedDetails): MessageInitShape<typeof ReceivedEmailSchema> {
  return {
    id: e.id,
    workspaceId: e.workspaceId,
    domainId: e.domainId,
    from: e.from,
    to: e.to,
    cc: e.cc,
    envelopeTo: e.envelopeTo,
    mailFrom: e.mailFrom,
    subject: e.subject,
    messageId: e.messageId,
    inReplyToHeader: e.inReplyToHeader,
    references: e.references,
    inReplyTo: e.inReplyTo,
    mailboxHash: e.mailboxHash,
    receivedAt: ts(e.receivedAt),
    attachments: e.attachments.map(attachmentOut),
    spamScore: e.spamScore,
    size: BigInt(e.size),
    ruleId: e.ruleId,
    action: e.action,
    forwardedEmailId: e.forwardedEmailId,
    ...(details ? { text: details.text, html: details.html, strippedTextReply: details.strippedTextReply, headers: details.headers } : {}),
  };
}
