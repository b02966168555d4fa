import { create } from "@bufbuild/protobuf";
import { ConnectError, type Client } from "@connectrpc/connect";
import PostalMime from "postal-mime";
import { EmailInputSchema, type EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { errorInfoOf, isNeighbourDown } from "@mailroom/kit/errors.js";
import { emailsOf, type Envelope, type SubmittedEmail } from "./message.js";

/** An SMTP reply: the code and its text (which starts with the enhanced status code). */
export interface Reply {
  code: number;
  message: string;
}

export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * One accepted message through the email service: parsed with postal-mime, each of its
 * emails sent with SendEmail (every check of POST /v1/emails is the service's), the
 * answer as an SMTP reply. The emails go one after the other: after a transient fault the
 * client resubmits the message, and the emails already sent are idempotent replays then
 * (their key is the Message-ID's), not second copies.
 */
export class Submitter {
  constructor(
    private readonly email: Client<typeof EmailService>,
    private readonly logger: Logger,
  ) {}

  async submit(workspaceId: string, envelope: Envelope, raw: Buffer): Promise<Reply> {
    let emails: SubmittedEmail[];
    try {
      emails = emailsOf(await PostalMime.parse(raw), envelope, workspaceId);
    } catch (err) {
      return { code: 554, message: `5.6.0 The message cannot be parsed: ${(err as Error).message}` };
    }
    if (emails.length === 0) return { code: 554, message: "5.5.1 No valid recipients" };
    const ids: string[] = [];
    let replayed = 0;
    for (const e of emails) {
      try {
        const res = await this.email.sendEmail({ workspaceId, email: inputOf(e) }, { timeoutMs: 30_000 });
        ids.push(res.email!.id);
      } catch (err) {
        // The Message-ID's key was used for another payload: the same email, resubmitted changed.
        if (errorInfoOf(err)?.code === "idempotency_key_reused") {
          replayed++;
          continue;
        }
        const refused = replyOf(err);
        // A permanent refusal after some emails went out says which (the client reports the failure to its user).
        const reply = refused.code >= 500 && ids.length ? { ...refused, message: `${refused.message} (to ${e.to}; already sent: ${ids.join(" ")})` } : refused;
        if (reply.code >= 500) this.logger.info({ workspaceId, code: errorInfoOf(err)?.code, reply: reply.code, sent: ids.length }, "submitted message refused");
        else this.logger.warn({ err, workspaceId, sent: ids.length }, "submitted message not sent; the client is asked to retry");
        return reply;
      }
    }
    if (ids.length === 0) return { code: 250, message: "2.0.0 Ok: already accepted (same Message-ID)" };
    return { code: 250, message: `2.0.0 Ok: queued as ${ids.join(" ")}${replayed ? ` (${replayed} already accepted)` : ""}` };
  }
}

function inputOf(e: SubmittedEmail) {
  return create(EmailInputSchema, {
    to: e.to,
    // A relayed message is finished content: `{{ }}` in it is text, not Liquid.
    content: { case: "raw", value: { from: e.from, fromName: e.fromName, subject: e.subject, html: e.html, text: e.text, asGiven: true } },
    replyTo: e.replyTo,
    cc: e.cc,
    bcc: e.bcc,
    headers: e.headers,
    attachments: e.attachments,
    tags: e.tags,
    idempotencyKey: e.idempotencyKey,
  });
}

/**
 * The email service's answer as an SMTP reply: refusals of the message are permanent
 * (5xx, the client must not retry them), anything else — the service down, slow, or
 * failing — is 451 and the client retries.
 */
export function replyOf(err: unknown): Reply {
  const info = errorInfoOf(err);
  if (!info || (err instanceof ConnectError && isNeighbourDown(err)) || info.httpStatus >= 500) {
    return { code: 451, message: "4.3.0 Temporary failure, try again later" };
  }
  switch (info.code) {
    case "invalid_from": {
      const domains = info.allowedDomains.length ? info.allowedDomains.join(", ") : "none";
      const emails = info.allowedEmails.length ? `; verified addresses: ${info.allowedEmails.join(", ")}` : "";
      return { code: 550, message: `5.7.1 ${info.message}; verified domains: ${domains}${emails}` };
    }
    case "monthly_limit_reached":
      return { code: 550, message: `5.7.0 ${info.message}` };
    case "attachments_too_large":
    case "payload_too_large":
      return { code: 552, message: `5.3.4 ${info.message}` };
    case "too_many_recipients":
      return { code: 550, message: `5.5.3 ${info.message}` };
    case "idempotency_request_in_progress":
      return { code: 451, message: "4.3.0 This Message-ID is still being sent; try again shortly" };
    case "rate_limited":
      return { code: 451, message: `4.7.0 ${info.message}` };
  }
  if (info.httpStatus === 429 || info.httpStatus === 409) return { code: 451, message: `4.3.0 ${info.message}` };
  return { code: 550, message: `5.6.0 ${info.code}: ${info.message}` };
}
