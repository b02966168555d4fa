import { describe, expect, it } from "vitest";
import type { Client } from "@connectrpc/connect";
import { AppError, toConnectError, appError } from "@mailroom/kit/errors.js";
import type { EmailService, SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { srsReverse } from "../domain/srs.js";
import { EmailServiceForwarder, forwardHops, MAX_FORWARD_HOPS } from "./forwarder.js";

const SECRET = "forwarder-secret-0123456789";
const now = new Date("2026-11-29T12:00:00Z");

/** The email service as the forwarder sees it: records each SendEmail, answers an email id or throws. */
function emailService(answer: (req: SendEmailRequest) => unknown = () => ({ email: { id: "trs_fwd" } })) {
  const calls: SendEmailRequest[] = [];
  const client = {
    sendEmail: async (req: SendEmailRequest) => {
      calls.push(req);
      return answer(req);
    },
  } as unknown as Client<typeof EmailService>;
  return { client, calls };
}

const input = (raw: string, mailFrom = "ann@sender.example") => ({
  workspaceId: "ws_a", receivedId: "rcv_1", to: "Team@Elsewhere.example", mailFrom, raw: new TextEncoder().encode(raw),
});

describe("EmailServiceForwarder", () => {
  it("sends the message verbatim behind one Received line, from the SRS0 address, keyed by the received email and target", async () => {
    const { client, calls } = emailService();
    const forwarder = new EmailServiceForwarder(client, { secret: SECRET, domain: "bounces.acme.test" }, () => now);
    const raw = "From: ann@sender.example\r\nSubject: hi\r\n\r\nbody\r\n";
    expect(await forwarder.forward(input(raw))).toEqual({ emailId: "trs_fwd" });
    const req = calls[0]!;
    expect(req.workspaceId).toBe("ws_a");
    expect(req.email?.to).toBe("Team@Elsewhere.example");
    expect(req.email?.idempotencyKey).toBe("mailroom-forward:rcv_1:team@elsewhere.example");
    expect(req.email?.content.case).toBe("forwarded");
    const f = req.email!.content.value as { raw: Uint8Array; envelopeFrom: string; receivedId: string };
    expect(srsReverse(SECRET, f.envelopeFrom, now)).toBe("ann@sender.example");
    expect(f.envelopeFrom.endsWith("@bounces.acme.test")).toBe(true);
    expect(f.receivedId).toBe("rcv_1");
    expect(new TextDecoder().decode(f.raw)).toBe(
      "Received: by bounces.acme.test (Mailroom) id rcv_1\r\n\tfor <Team@Elsewhere.example>;\r\n\tSun, 29 Nov 2026 12:00:00 +0000\r\n" + raw,
    );
  });

  it("keeps a message's bare-LF line endings, and the null sender null", async () => {
    const { client, calls } = emailService();
    await new EmailServiceForwarder(client, { secret: SECRET, domain: "b.test" }, () => now).forward(input("From: a@x.test\n\nbody\n", ""));
    const f = calls[0]!.email!.content.value as { raw: Uint8Array; envelopeFrom: string };
    expect(f.envelopeFrom).toBe("");
    expect(new TextDecoder().decode(f.raw)).toMatch(/^Received: by b\.test \(Mailroom\) id rcv_1\n\tfor <Team@Elsewhere\.example>;\n\t[^\r]+\nFrom: a@x\.test\n\nbody\n$/);
  });

  it("refuses a message that went round its forwards MAX_FORWARD_HOPS times (a loop), without calling the email service", async () => {
    const { client, calls } = emailService();
    const forwarder = new EmailServiceForwarder(client, { secret: SECRET, domain: "b.test" }, () => now);
    let raw = "From: a@x.test\r\n\r\nReceived: by b.test (Mailroom) id in-the-body\r\n";
    for (let i = 0; i < MAX_FORWARD_HOPS - 1; i++) raw = `Received: by b.test (Mailroom) id rcv_${i};\r\n\tSun, 29 Nov 2026 12:00:00 +0000\r\n${raw}`;
    expect(forwardHops(new TextEncoder().encode(raw))).toBe(MAX_FORWARD_HOPS - 1);
    await forwarder.forward(input(raw));
    const looped = `Received: by c.test (Mailroom) id rcv_x;\r\n\tSun, 29 Nov 2026 12:00:00 +0000\r\n${raw}`;
    const err = await forwarder.forward(input(looped)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "forward_loop", httpStatus: 400 });
    expect(calls).toHaveLength(1);
  });

  it("turns the email service's refusal into the same AppError (a 4xx the receiver keeps the message for), other failures as they are", async () => {
    const refused = emailService(() => {
      throw toConnectError(appError({ code: "monthly_limit_reached", httpStatus: 403, message: "limit" }));
    });
    const err = await new EmailServiceForwarder(refused.client, { secret: SECRET, domain: "b.test" }).forward(input("From: a@x.test\r\n\r\nx\r\n")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
    const down = emailService(() => {
      throw new Error("connect ECONNREFUSED");
    });
    const other = await new EmailServiceForwarder(down.client, { secret: SECRET, domain: "b.test" }).forward(input("From: a@x.test\r\n\r\nx\r\n")).catch((e: unknown) => e);
    expect(other).not.toBeInstanceOf(AppError);
  });
});
