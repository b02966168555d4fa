import type { Client } from "@connectrpc/connect";
import type { EmailInput, EmailRecord, EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { ACTOR_HEADER } from "@mailroom/kit/audit.js";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { appErrorFromInfo } from "@mailroom/kit/errors.js";
import type { RequestCallOptions, RequestScoped } from "@mailroom/http/deps.js";
import { MAX_BATCH } from "./schemas/email.js";

/** Bodies up to this size are coalesced; a larger email goes alone so a round stays small. */
export const COALESCE_MAX_BODY_BYTES = 64 * 1024;

type Answer = { record: EmailRecord } | { error: Error };

/**
 * `POST /v1/emails` of one workspace, coalesced while the email service is busy: the first
 * send goes out at once as SendEmail, and the sends that arrive while it is in flight go
 * together in one SendBatch marked `independent` (each email its own request, so the
 * monthly limit refuses one email and not its neighbours). One RPC then carries many
 * emails, and the email service stores and publishes them in one pass, which is most of
 * what a busy sender pays per email. Each caller still gets exactly its own answer: its
 * record, or the error SendEmail would have given it.
 */
export class SingleSends {
  private readonly rounds: Coalescer<{ email: EmailInput; options: RequestCallOptions }, Answer>;

  constructor(private readonly client: RequestScoped<Client<typeof EmailService>>) {
    // A round is one workspace's and one sender's: the call's actor is who each email records as its sender.
    this.rounds = new Coalescer((key, sends) => this.sendRound((JSON.parse(key) as [string, string])[0], sends), MAX_BATCH);
  }

  async send(workspaceId: string, email: EmailInput, options: RequestCallOptions, bodyBytes: number): Promise<EmailRecord> {
    if (bodyBytes > COALESCE_MAX_BODY_BYTES) return (await this.client.sendEmail({ workspaceId, email }, options)).email!;
    const answer = await this.rounds.run(JSON.stringify([workspaceId, options.headers[ACTOR_HEADER] ?? ""]), { email, options });
    if ("error" in answer) throw answer.error;
    return answer.record;
  }

  private async sendRound(workspaceId: string, sends: { email: EmailInput; options: RequestCallOptions }[]): Promise<Answer[]> {
    if (sends.length === 1) {
      const { email, options } = sends[0]!;
      return [{ record: (await this.client.sendEmail({ workspaceId, email }, options)).email! }];
    }
    // The round's call carries the first request's id: its logs name one of the requests.
    const res = await this.client.sendBatch({ workspaceId, emails: sends.map((s) => s.email), independent: true }, sends[0]!.options);
    const failures = new Map(res.failed.map((f) => [f.index, f]));
    const records = res.successful.values();
    return sends.map((_, index) => {
      const failure = failures.get(index);
      if (failure) return { error: appErrorFromInfo(failure.error!) };
      const record = records.next().value;
      if (!record) throw new Error("the email service answered fewer emails than it was sent");
      return { record };
    });
  }
}
