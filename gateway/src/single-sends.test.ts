import { describe, expect, it } from "vitest";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { EmailInputSchema, EmailRecordSchema, EmailService, type EmailInput } from "@mailroom/proto/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { AppError, badRequest, toErrorInfo } from "@mailroom/kit/errors.js";
import { COALESCE_MAX_BODY_BYTES, SingleSends } from "./single-sends.js";

const tick = () => new Promise((r) => setTimeout(r, 0));
const input = (to: string) => create(EmailInputSchema, { to, email: { case: "raw", value: { from: "a@x.test", subject: "s", html: "<p>h</p>" } } } as never) as EmailInput;

/** An email service that holds every call until `open()`, refusing recipients that start with "bad". */
function emailService() {
  const calls: string[] = [];
  let open!: () => void;
  let gate = new Promise<void>((r) => (open = r));
  const refusal = (to: string) => badRequest("invalid_from", `refused ${to}`, { allowedEmails: ["ok@x.test"], allowedDomains: [] });
  const transport = memoryTransport(({ service }) => {
    service(EmailService, {
      async sendEmail(req, ctx) {
        calls.push(`SendEmail ${req.email!.to} ${ctx.requestHeader.get("x-mailroom-actor") ?? ""}`.trim());
        await gate;
        if (req.email!.to.startsWith("down")) throw new ConnectError("restarting", Code.Unavailable);
        if (req.email!.to.startsWith("bad")) throw refusal(req.email!.to);
        return { email: create(EmailRecordSchema, { id: `id-${req.email!.to}`, to: req.email!.to }) };
      },
      async sendBatch(req, ctx) {
        calls.push(`SendBatch${req.independent ? " independent" : ""} ${req.emails.map((e) => e.to).join(",")} ${ctx.requestHeader.get("x-mailroom-actor") ?? ""}`.trim());
        await gate;
        const successful = [];
        const failed = [];
        for (const [index, e] of req.emails.entries()) {
          if (e.to.startsWith("bad")) failed.push({ index, to: e.to, error: toErrorInfo(refusal(e.to).toInit()) });
          else successful.push(create(EmailRecordSchema, { id: `id-${e.to}`, to: e.to }));
        }
        return { successful, failed };
      },
    });
  });
  return {
    sends: new SingleSends(createClient(EmailService, transport)),
    calls,
    open: () => {
      open();
      gate = Promise.resolve();
    },
  };
}

/** Call options as rpcOptions(request) makes them. */
const CALL = { headers: { "x-request-id": "single-sends-test" } };

describe("single sends coalesced per workspace", () => {
  it("sends the first alone and the ones that arrive meanwhile as one independent batch, each answered with its own result", async () => {
    const svc = emailService();
    const firsts = [svc.sends.send("ws", input("first@y.test"), CALL, 100), svc.sends.send("ws2", input("other@y.test"), CALL, 100)];
    await tick(); // the first of each workspace is in flight
    const results = [
      firsts[0]!,
      svc.sends.send("ws", input("second@y.test"), CALL, 100),
      svc.sends.send("ws", input("bad@y.test"), CALL, 100),
      svc.sends.send("ws", input("third@y.test"), CALL, 100),
      firsts[1]!,
    ].map((p) => p.then((r) => r.id, (e: unknown) => e));
    svc.open();
    const [first, second, bad, third, other] = await Promise.all(results);
    expect(svc.calls).toEqual([
      "SendEmail first@y.test",
      "SendEmail other@y.test",
      "SendBatch independent second@y.test,bad@y.test,third@y.test",
    ]);
    expect([first, second, third, other]).toEqual(["id-first@y.test", "id-second@y.test", "id-third@y.test", "id-other@y.test"]);
    // The refused one gets the error SendEmail would have given it, details included.
    expect(bad).toBeInstanceOf(AppError);
    expect((bad as AppError).toInit()).toMatchObject({ code: "invalid_from", httpStatus: 400, message: "refused bad@y.test", allowedEmails: ["ok@x.test"] });
  });

  it("gives a refusal of a lone send as SendEmail gave it", async () => {
    const svc = emailService();
    svc.open();
    await expect(svc.sends.send("ws", input("down@y.test"), CALL, 100)).rejects.toMatchObject({ code: Code.Unavailable });
  });

  it("sends a large email on its own, never in a round", async () => {
    const svc = emailService();
    const first = svc.sends.send("ws", input("first@y.test"), CALL, 100);
    await tick();
    const large = svc.sends.send("ws", input("large@y.test"), CALL, COALESCE_MAX_BODY_BYTES + 1);
    const small = svc.sends.send("ws", input("small@y.test"), CALL, 100);
    svc.open();
    await Promise.all([first, large, small]);
    expect(svc.calls).toEqual(["SendEmail first@y.test", "SendEmail large@y.test", "SendEmail small@y.test"]);
  });

  it("coalesces one sender's sends only: each email records the key that sent it", async () => {
    const svc = emailService();
    const by = (key: string) => ({ headers: { "x-request-id": `r-${key}`, "x-mailroom-actor": `key:${key}` } });
    const first = svc.sends.send("ws", input("first@y.test"), by("key_a"), 100);
    await tick();
    const rest = [
      svc.sends.send("ws", input("a2@y.test"), by("key_a"), 100),
      svc.sends.send("ws", input("b1@y.test"), by("key_b"), 100),
      svc.sends.send("ws", input("a3@y.test"), by("key_a"), 100),
      svc.sends.send("ws", input("b2@y.test"), by("key_b"), 100),
    ];
    svc.open();
    await Promise.all([first, ...rest]);
    // Key A's first went alone and its next two together; key B's two (arriving together) as one round of their own.
    expect([...svc.calls].sort()).toEqual([
      "SendBatch independent a2@y.test,a3@y.test key:key_a",
      "SendBatch independent b1@y.test,b2@y.test key:key_b",
      "SendEmail first@y.test key:key_a",
    ]);
  });
});
