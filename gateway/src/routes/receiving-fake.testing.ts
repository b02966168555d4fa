/**
 * A stand-in ReceivingService (DESIGN §10.4) for the gateway's route and console tests, in
 * memory behind the same Connect router a unit serves (memoryTransport): it keeps each
 * workspace's domains, rules and received emails apart as the contract says, answers the
 * contract's error codes, streams contents in chunks, and records every request so a test can
 * see which workspace the gateway named. (Imported only by tests.)
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type ConnectRouter } from "@connectrpc/connect";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError, notFound } from "@mailroom/kit/errors.js";
import {
  InboundDomainSchema, InboundRuleSchema, ReceivedAttachmentSchema, ReceivedEmailSchema, ReceivingService,
  type InboundDomain, type InboundRule, type ReceivedAttachment, type ReceivedEmail,
} from "@mailroom/proto/inbound/v1/inbound_pb.js";

export const FAKE_MX_HOST = "mx.mailroom.test";

interface Content {
  info: ReceivedAttachment;
  chunks: Uint8Array[];
  /** Throw this after the first chunk (a store failing mid-way). */
  failAfterFirst?: boolean;
  /** The first chunk carries the metadata and no data. */
  infoAlone?: boolean;
  /** Never end: yield a chunk every 20 ms until the call is cancelled. */
  endless?: boolean;
}

/** A received email to plant: ReceivedEmail's fields, plus attachments' bytes by id. */
export type PlantedEmail = Omit<MessageInitShape<typeof ReceivedEmailSchema>, "$typeName" | "attachments"> & {
  id: string;
  workspaceId: string;
  attachments?: Array<Omit<MessageInitShape<typeof ReceivedAttachmentSchema>, "$typeName"> & { id: string; bytes?: Uint8Array }>;
  raw?: Uint8Array;
};

export class FakeReceiving {
  readonly domains: InboundDomain[] = [];
  readonly rules: InboundRule[] = [];
  readonly emails: ReceivedEmail[] = [];
  /** `<emailId>/<attachmentId>` or `<emailId>/raw`. */
  readonly contents = new Map<string, Content>();
  /** Every request: its method and the workspace it named. */
  readonly calls: Array<{ method: string; workspaceId: string; request: unknown }> = [];
  /** Domains whose MX record is "published" (VerifyInboundDomain finds it). */
  readonly published = new Set<string>();
  /** The unit is down: every call fails as a refused connection does. */
  down = false;
  /** Streams whose call was cancelled (the gateway aborted it). */
  cancelled = 0;
  private n = 0;

  client() {
    return createClient(ReceivingService, memoryTransport((router) => this.routes(router)));
  }

  plant(e: PlantedEmail): ReceivedEmail {
    const { attachments = [], raw, ...fields } = e;
    const email = create(ReceivedEmailSchema, {
      domainId: "ind_planted",
      from: { address: "ann@example.test", name: "Ann" },
      subject: "Hello",
      messageId: `${e.id}@example.test`,
      receivedAt: timestampFromDate(new Date("2030-01-01T00:00:00Z")),
      ...fields,
      attachments: attachments.map(({ bytes, ...a }) => create(ReceivedAttachmentSchema, { filename: "file.bin", contentType: "application/octet-stream", disposition: "attachment", size: BigInt(bytes?.byteLength ?? 0), ...a })),
    });
    this.emails.push(email);
    for (const a of attachments) {
      const info = email.attachments.find((x) => x.id === a.id)!;
      this.contents.set(`${e.id}/${a.id}`, { info, chunks: chunked(a.bytes ?? new Uint8Array()) });
    }
    if (raw) this.contents.set(`${e.id}/raw`, { info: create(ReceivedAttachmentSchema, { id: "raw", filename: `${e.id}.eml`, contentType: "message/rfc822", size: BigInt(raw.byteLength) }), chunks: chunked(raw), infoAlone: true });
    return email;
  }

  private record(method: string, request: { workspaceId: string }) {
    this.calls.push({ method, workspaceId: request.workspaceId, request });
    if (this.down) throw new ConnectError("connect ECONNREFUSED 127.0.0.1:1", Code.Unavailable);
    if (!request.workspaceId) throw appError({ code: "invalid_request", httpStatus: 400, message: "workspace_id is required" });
  }

  private domainOf(workspaceId: string, id: string): InboundDomain {
    const d = this.domains.find((x) => x.id === id && x.workspaceId === workspaceId);
    if (!d) throw notFound("inbound_domain_not_found", `No inbound domain ${id} in this workspace`);
    return d;
  }

  private emailOf(workspaceId: string, id: string): ReceivedEmail {
    const e = this.emails.find((x) => x.id === id && x.workspaceId === workspaceId);
    if (!e) throw notFound("received_email_not_found", `No received email ${id} in this workspace`);
    return e;
  }

  private async *stream(content: Content | undefined, signal: AbortSignal): AsyncGenerator<{ info?: ReceivedAttachment; data: Uint8Array }> {
    if (!content) return;
    // The caller cancelled the call (its client went away).
    signal.addEventListener("abort", () => this.cancelled++, { once: true });
    // A raw message's first chunk carries only what it is (the contract allows either).
    const [first = new Uint8Array(), ...rest] = content.infoAlone ? [new Uint8Array(), ...content.chunks] : content.chunks;
    yield { info: content.info, data: first };
    if (content.failAfterFirst) throw new Error("object store read failed");
    for (const data of rest) yield { data };
    while (content.endless && !signal.aborted) {
      await new Promise((r) => setTimeout(r, 20));
      yield { data: new Uint8Array(1024) };
    }
  }

  routes(router: ConnectRouter): void {
    router.service(ReceivingService, {
      createInboundDomain: (req) => {
        this.record("createInboundDomain", req);
        const existing = this.domains.find((d) => d.domain === req.domain);
        if (existing) {
          throw existing.workspaceId === req.workspaceId
            ? appError({ code: "inbound_domain_exists", httpStatus: 409, message: `${req.domain} is already an inbound domain of this workspace` })
            : appError({ code: "inbound_domain_taken", httpStatus: 409, message: `${req.domain} is an inbound domain of another workspace` });
        }
        const domain = create(InboundDomainSchema, {
          id: `ind_${++this.n}`, workspaceId: req.workspaceId, domain: req.domain, status: "pending", mxHost: FAKE_MX_HOST, mxPriority: 10,
          createdAt: timestampFromDate(new Date("2030-01-01T00:00:00Z")),
        });
        this.domains.push(domain);
        return { domain };
      },
      listInboundDomains: (req) => {
        this.record("listInboundDomains", req);
        return { domains: this.domains.filter((d) => d.workspaceId === req.workspaceId) };
      },
      getInboundDomain: (req) => {
        this.record("getInboundDomain", req);
        return { domain: this.domainOf(req.workspaceId, req.id) };
      },
      verifyInboundDomain: (req) => {
        this.record("verifyInboundDomain", req);
        const d = this.domainOf(req.workspaceId, req.id);
        d.lastCheckedAt = timestampFromDate(new Date("2030-01-02T00:00:00Z"));
        if (this.published.has(d.domain)) {
          d.status = "verified";
          d.verifiedAt = d.lastCheckedAt;
          d.failure = "";
        } else {
          d.failure = "no MX record";
        }
        return { domain: d };
      },
      deleteInboundDomain: (req) => {
        this.record("deleteInboundDomain", req);
        const d = this.domainOf(req.workspaceId, req.id);
        this.domains.splice(this.domains.indexOf(d), 1);
        for (const r of this.rules.filter((x) => x.domainId === d.id)) this.rules.splice(this.rules.indexOf(r), 1);
        return {};
      },
      createInboundRule: (req) => {
        this.record("createInboundRule", req);
        const d = this.domainOf(req.workspaceId, req.domainId);
        const loop = this.domains.find((x) => req.forwardTo.toLowerCase().endsWith(`@${x.domain}`));
        if (loop) throw appError({ code: "invalid_inbound_rule", httpStatus: 400, message: `forwardTo is at ${loop.domain}, an inbound domain of this server: the message would come back here` });
        if (this.rules.some((r) => r.domainId === d.id && r.match === req.match)) {
          throw appError({ code: "inbound_rule_exists", httpStatus: 409, message: `${d.domain} has a rule for ${req.match} already` });
        }
        const rule = create(InboundRuleSchema, {
          id: `inr_${++this.n}`, workspaceId: req.workspaceId, domainId: d.id, match: req.match, action: req.action, forwardTo: req.forwardTo,
          createdAt: timestampFromDate(new Date("2030-01-01T00:00:00Z")),
        });
        this.rules.push(rule);
        return { rule };
      },
      listInboundRules: (req) => {
        this.record("listInboundRules", req);
        const d = this.domainOf(req.workspaceId, req.domainId);
        return { rules: this.rules.filter((r) => r.domainId === d.id) };
      },
      deleteInboundRule: (req) => {
        this.record("deleteInboundRule", req);
        const d = this.domainOf(req.workspaceId, req.domainId);
        const rule = this.rules.find((r) => r.domainId === d.id && r.id === req.id);
        if (!rule) throw notFound("inbound_rule_not_found", `No rule ${req.id} on inbound domain ${d.id}`);
        this.rules.splice(this.rules.indexOf(rule), 1);
        return {};
      },
      listReceivedEmails: (req) => {
        this.record("listReceivedEmails", req);
        if (req.cursor && !/^\d+$/.test(req.cursor)) throw appError({ code: "invalid_cursor", httpStatus: 400, message: "cursor is not one this list returned" });
        const since = req.since ? timestampDate(req.since).getTime() : -Infinity;
        const matches = this.emails
          .filter((e) => e.workspaceId === req.workspaceId)
          .filter((e) => !req.to || e.envelopeTo.includes(req.to) || e.to.some((a) => a.address.toLowerCase() === req.to))
          .filter((e) => !req.from || e.from?.address.toLowerCase() === req.from)
          .filter((e) => timestampDate(e.receivedAt!).getTime() >= since)
          .sort((a, b) => timestampDate(b.receivedAt!).getTime() - timestampDate(a.receivedAt!).getTime());
        const start = Number(req.cursor || 0);
        const limit = req.limit || 25;
        // The list leaves the bodies and headers out, as the contract says.
        const page = matches.slice(start, start + limit).map((e) => create(ReceivedEmailSchema, { ...e, text: "", html: "", strippedTextReply: "", headers: [] }));
        return { emails: page, nextCursor: start + limit < matches.length ? String(start + limit) : "" };
      },
      getReceivedEmail: (req) => {
        this.record("getReceivedEmail", req);
        return { email: this.emailOf(req.workspaceId, req.id) };
      },
      getReceivedAttachment: (req, ctx) => {
        this.record("getReceivedAttachment", req);
        const self = this;
        return (async function* () {
          const e = self.emailOf(req.workspaceId, req.emailId);
          if (!e.attachments.some((a) => a.id === req.attachmentId)) throw notFound("received_attachment_not_found", `No attachment ${req.attachmentId}`);
          yield* self.stream(self.contents.get(`${e.id}/${req.attachmentId}`), ctx.signal);
        })();
      },
      getReceivedRaw: (req, ctx) => {
        this.record("getReceivedRaw", req);
        const self = this;
        return (async function* () {
          const e = self.emailOf(req.workspaceId, req.emailId);
          yield* self.stream(self.contents.get(`${e.id}/raw`), ctx.signal);
        })();
      },
      getDmarcSummary: (req) => {
        this.record("getDmarcSummary", req);
        return {};
      },
    });
  }
}

/** Bytes in 64 KiB chunks, as the object store hands them over. */
export function chunked(bytes: Uint8Array, size = 64 * 1024): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.byteLength; i += size) out.push(bytes.subarray(i, i + size));
  return out.length ? out : [new Uint8Array()];
}
