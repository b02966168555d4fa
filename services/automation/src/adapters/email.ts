/**
 * The email service over Connect, as send steps use it: the sends of one workspace that are
 * due together go in one SendBatch (independent: each email its own request, so the monthly
 * limit or a suppression refuses one and not its neighbours) of at most the email service's
 * batch size, each with its run's idempotency key; each caller gets its own answer.
 */
import type { Client } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { LRUCache } from "lru-cache";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { appErrorFromInfo, errorInfoOf, isNeighbourDown } from "@mailroom/kit/errors.js";
import { ConnectError } from "@connectrpc/connect";
import { EmailStatus, type EmailInput, type EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import type { Mailer, SendRequest, SendResult } from "../domain/runner.js";

const RPC = { timeoutMs: 30_000 };
/** The email service's largest batch (its MAX_BATCH, the public batch route's limit). */
export const SEND_BATCH_MAX = 50;

/** A batch item's (or a whole call's) refusal as a step result. */
function resultOfError(code: string, httpStatus: number, message: string): SendResult {
  if (code === "idempotency_key_reused") return { kind: "sent_before" };
  if (code === "idempotency_request_in_progress" || httpStatus >= 500 || httpStatus === 429) return { kind: "retry", detail: `${code}: ${message}` };
  return { kind: "refused", detail: `${code}: ${message}` };
}

export class EmailClient implements Mailer {
  private readonly rounds: Coalescer<SendRequest, SendResult>;
  private readonly templates = new LRUCache<string, { template: string | undefined }>({ max: 50_000, ttl: 10 * 60_000 });

  constructor(
    private readonly client: Client<typeof EmailService>,
    batchSize = SEND_BATCH_MAX,
  ) {
    this.rounds = new Coalescer((workspaceId, sends) => this.sendRound(workspaceId, sends), Math.min(batchSize, SEND_BATCH_MAX));
  }

  send(workspaceId: string, request: SendRequest): Promise<SendResult> {
    return this.rounds.run(workspaceId, request);
  }

  private async sendRound(workspaceId: string, sends: SendRequest[]): Promise<SendResult[]> {
    const emails: EmailInput[] = sends.map((s) => ({
      $typeName: "mailroom.email.v1.EmailInput",
      to: s.to,
      content: { case: "templated", value: { $typeName: "mailroom.email.v1.TemplatedEmail", template: s.template, variables: s.variables as JsonObject } },
      settings: { $typeName: "mailroom.email.v1.EmailSettings", trackOpens: s.trackOpens, trackClicks: s.trackClicks },
      idempotencyKey: s.idempotencyKey,
      groupBy: "",
      payloadHash: "",
      replyTo: [],
      cc: [],
      bcc: [],
      headers: [],
      attachments: [],
      tags: [],
      // Lifecycle mail to a contact, not a receipt: the email service compiles it with the
      // unsubscribe footer and delivery adds List-Unsubscribe (RFC 8058 one-click).
      automation: true,
    }));
    let res;
    try {
      res = await this.client.sendBatch({ workspaceId, emails, independent: true }, RPC);
    } catch (err) {
      const info = errorInfoOf(err);
      if (info) {
        // A refusal of the whole call says nothing about one contact's send (independent
        // batches refuse items one by one): each goes again on its own, and only a refusal
        // of a call that held just that send is its answer.
        if (sends.length > 1) return Promise.all(sends.map((s) => this.sendRound(workspaceId, [s]).then((r) => r[0]!)));
        const e = appErrorFromInfo(info);
        return [resultOfError(e.code, e.httpStatus, e.message)];
      }
      const detail = err instanceof ConnectError && isNeighbourDown(err) ? "email service unavailable" : String((err as Error)?.message ?? err);
      return sends.map(() => ({ kind: "retry", detail }));
    }
    const failures = new Map(res.failed.map((f) => [f.index, f]));
    const records = res.successful.values();
    return sends.map((_, index): SendResult => {
      const failure = failures.get(index);
      if (failure) {
        const e = failure.error ? appErrorFromInfo(failure.error) : undefined;
        return e ? resultOfError(e.code, e.httpStatus, e.message) : { kind: "retry", detail: "refused without a reason" };
      }
      const record = records.next().value;
      if (!record) return { kind: "retry", detail: "the email service answered fewer emails than it was sent" };
      if (record.status === EmailStatus.FAILED) return { kind: "suppressed", emailId: record.id, detail: record.statusReason || "suppressed" };
      return { kind: "sent", emailId: record.id };
    });
  }

  async templateOf(workspaceId: string, emailId: string): Promise<string | undefined> {
    const key = `${workspaceId}:${emailId}`;
    const cached = this.templates.get(key);
    if (cached) return cached.template;
    const res = await this.client.getEmail({ workspaceId, id: emailId }, RPC);
    const template = res.email?.template || undefined;
    this.templates.set(key, { template });
    return template;
  }
}
