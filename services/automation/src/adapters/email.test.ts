import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { badRequest, toConnectError } from "@mailroom/kit/errors.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { EmailRecordSchema, EmailService, EmailStatus, type SendBatchRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { EmailClient, SEND_BATCH_MAX } from "./email.js";

/** An email service that refuses whole calls over `maxBatch` (as the real one does over 50) and accepts the rest. */
function emailService(maxBatch: number) {
  const calls: number[] = [];
  const requests: SendBatchRequest[] = [];
  const transport = memoryTransport((router) =>
    router.service(EmailService, {
      async sendBatch(req: SendBatchRequest) {
        calls.push(req.emails.length);
        requests.push(req);
        if (req.emails.length > maxBatch) throw toConnectError(badRequest("batch_invalid", `A batch holds at most ${maxBatch} emails; got ${req.emails.length}`));
        return {
          successful: req.emails.map((e, i) => create(EmailRecordSchema, { id: `trs_${e.idempotencyKey.split(":")[1]}_${i}`, status: EmailStatus.SENT, to: e.to })),
          failed: [],
        };
      },
    }),
  );
  return { client: createClient(EmailService, transport), calls, requests };
}

const send = (n: number) => ({ to: `c${n}@example.test`, template: "welcome", variables: {}, idempotencyKey: `automation:run_${n}:s1` });

describe("EmailClient", () => {
  it("sends the due sends of a workspace in batches no larger than the email service takes", async () => {
    expect(SEND_BATCH_MAX).toBe(50);
    const svc = emailService(50);
    const mailer = new EmailClient(svc.client, 100);
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => mailer.send("ws_acme", send(i))));
    expect(results.every((r) => r.kind === "sent")).toBe(true);
    expect(Math.max(...svc.calls)).toBeLessThanOrEqual(50);
    expect(svc.calls.reduce((a, b) => a + b, 0)).toBe(120);
  });

  it("marks every send as an automation's (lifecycle mail: unsubscribe footer and List-Unsubscribe), templated with the run's key", async () => {
    const svc = emailService(50);
    await new EmailClient(svc.client).send("ws_acme", { ...send(7), variables: { firstName: "Pia" } });
    const [email] = svc.requests[0]!.emails;
    expect(email).toMatchObject({ to: "c7@example.test", automation: true, idempotencyKey: "automation:run_7:s1" });
    expect(email!.content).toMatchObject({ case: "templated", value: { template: "welcome", variables: { firstName: "Pia" } } });
  });

  it("a refusal of a whole call is no contact's refusal: each send goes again on its own", async () => {
    const svc = emailService(3);
    const mailer = new EmailClient(svc.client, 10);
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => mailer.send("ws_acme", send(i))));
    expect(results.map((r) => r.kind)).toEqual(["sent", "sent", "sent", "sent", "sent"]);
    // One call of all five (refused), then one per send.
    expect(svc.calls).toEqual([5, 1, 1, 1, 1, 1]);
  });
});
