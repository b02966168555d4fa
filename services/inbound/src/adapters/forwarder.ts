import type { Client } from "@connectrpc/connect";
import { appError, appErrorFromInfo, errorInfoOf } from "@mailroom/kit/errors.js";
import type { TokenSecret } from "@mailroom/content/tokens.js";
import type { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import type { Forwarder } from "../domain/ports.js";
import { srsForward } from "../domain/srs.js";

/**
 * A message that already passed this many forwards of ours is in a loop (A forwards to B,
 * which forwards back to A through another provider): it is kept, not sent round again.
 */
export const MAX_FORWARD_HOPS = 3;

/** A 35 MB message over the loopback takes well under this; a stuck email service does not hold the SMTP session forever. */
const FORWARD_TIMEOUT_MS = 120_000;

export interface ForwarderSettings {
  /** MAILROOM_SECRET (with the previous one while rotating: the first one signs). */
  secret: TokenSecret;
  /** The domain of the SRS addresses: mail to them must reach this unit (the bounce domain). */
  domain: string;
}

/**
 * A `forward` rule's action (DESIGN §10.4): the message goes through the email service and
 * delivery like any email (routes, relay settings, retries, the target's suppression, usage
 * and the email log apply), sent verbatim — the original From and DKIM signature intact, a
 * Received trace header prepended — with the SRS0 rewrite of the original envelope sender as
 * MAIL FROM, so the next hop's SPF check is of our domain, not the original sender's.
 *
 * The email's idempotency key is derived from the received email and the target: a forward
 * retried after a failure (the sending MTA's retry of a 451) is the same email, sent once.
 * A refusal by the email service is thrown as an AppError (4xx: will not change on retry);
 * anything else as the RPC's error.
 */
export class EmailServiceForwarder implements Forwarder {
  constructor(
    private readonly client: Client<typeof EmailService>,
    private readonly settings: ForwarderSettings,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async forward(input: { workspaceId: string; receivedId: string; to: string; mailFrom: string; raw: Uint8Array }): Promise<{ emailId: string }> {
    const now = this.now();
    if (forwardHops(input.raw) >= MAX_FORWARD_HOPS) {
      throw appError({ code: "forward_loop", httpStatus: 400, message: `the message was forwarded by Mailroom ${MAX_FORWARD_HOPS} times already: a forwarding loop` });
    }
    const envelopeFrom = srsForward(this.settings.secret, input.mailFrom, this.settings.domain, now);
    const raw = withTraceHeader(input.raw, traceHeader(this.settings.domain, input.receivedId, input.to, now));
    try {
      const res = await this.client.sendEmail(
        {
          workspaceId: input.workspaceId,
          email: {
            to: input.to,
            content: { case: "forwarded", value: { raw, envelopeFrom, receivedId: input.receivedId } },
            idempotencyKey: `mailroom-forward:${input.receivedId}:${input.to.toLowerCase()}`,
          },
        },
        { timeoutMs: FORWARD_TIMEOUT_MS },
      );
      if (!res.email?.id) throw new Error("the email service answered a forward without an email");
      return { emailId: res.email.id };
    } catch (err) {
      const info = errorInfoOf(err);
      throw info ? appErrorFromInfo(info) : err;
    }
  }
}

/** `Received: by <domain> (Mailroom) id <rcv>; <date>`: one more hop, as any forwarding MTA records it (RFC 5321 §4.4). */
export function traceHeader(domain: string, receivedId: string, to: string, now: Date): string {
  const date = now.toUTCString().replace(/GMT$/, "+0000");
  const id = /^[A-Za-z0-9_-]+$/.test(receivedId) ? receivedId : "forward";
  const rcpt = /^[^\s<>;]+@[^\s<>;]+$/.test(to) ? `\r\n\tfor <${to}>` : "";
  return `Received: by ${domain} (Mailroom) id ${id}${rcpt};\r\n\t${date}`;
}

/** How many of our trace headers the message's header block carries (forwards it went through). */
export function forwardHops(raw: Uint8Array): number {
  const scan = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, 256 * 1024));
  const ends = [scan.indexOf("\r\n\r\n"), scan.indexOf("\n\n")].filter((i) => i >= 0);
  const head = scan.subarray(0, ends.length ? Math.min(...ends) : scan.length).toString("latin1");
  return head.match(/^Received: by \S+ \(Mailroom\) id /gim)?.length ?? 0;
}

/** The message with a header line in front of it, in the message's own line ending. */
export function withTraceHeader(raw: Uint8Array, header: string): Uint8Array {
  const head = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.byteLength, 4096));
  const firstLf = head.indexOf(10);
  const crlf = firstLf < 0 || (firstLf > 0 && head[firstLf - 1] === 13);
  const line = Buffer.from(`${crlf ? header : header.replace(/\r\n/g, "\n")}${crlf ? "\r\n" : "\n"}`, "latin1");
  const out = new Uint8Array(line.length + raw.byteLength);
  out.set(line, 0);
  out.set(raw, line.length);
  return out;
}
