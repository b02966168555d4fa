import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer, { type SendMailOptions } from "nodemailer";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { EmailService } from "@mailroom/proto/email/v1/email_pb.js";
import { AppError, toConnectError } from "@mailroom/kit/errors.js";
import { AddressAttempts } from "@mailroom/kit/token-bucket.js";
import { ApiKeys } from "./auth.js";
import { MAX_RECIPIENTS, startSubmissionListener, type SubmissionListener } from "./smtp.js";
import { replyOf, Submitter } from "./submit.js";

const KEY = "mr_good_key_123";
const quiet = { info() {}, warn() {} };
/** An address of this machine other than loopback, if it has one. */
const external = Object.values(os.networkInterfaces()).flat().find((i) => i && !i.internal && i.family === "IPv4")?.address;

const accounts = {
  async authenticate({ apiKey }: { apiKey: string }) {
    if (apiKey === KEY) return { workspaceId: "ws_1", keyId: "key_1", scopes: ["api_user"] };
    throw new ConnectError("unknown key", Code.Unauthenticated);
  },
} as unknown as Client<typeof AccountsService>;
type Sent = { to: string; cc: string[]; bcc: string[]; content?: { case: string; value: { subject: string; text: string; asGiven: boolean } } };
const sent: Sent[] = [];
const email = {
  async sendEmail({ email: e }: { email: Sent }) {
    sent.push({ to: e.to, cc: e.cc, bcc: e.bcc, content: e.content });
    return { email: { id: `trs_${String(sent.length).padStart(26, "0")}` } };
  },
} as unknown as Client<typeof EmailService>;

let listener: SubmissionListener;
beforeAll(async () => {
  listener = await startSubmissionListener({
    keys: new ApiKeys(accounts, 10_000),
    failures: new AddressAttempts(20),
    submitter: new Submitter(email, quiet),
    host: "0.0.0.0",
    port: 0,
    maxMessageBytes: 100_000,
    logger: quiet,
  });
});
afterAll(() => listener?.close());

const send = async (host: string, mail: SendMailOptions, pass = KEY) => {
  const t = nodemailer.createTransport({ host, port: listener.port, secure: false, ignoreTLS: true, auth: { user: "app", pass } });
  try {
    return await t.sendMail(mail);
  } finally {
    t.close();
  }
};

describe("the submission listener (without a certificate)", () => {
  it("takes AUTH in clear from loopback", async () => {
    const info = await send("127.0.0.1", { from: "a@acme.test", to: "x@example.test", subject: "s {{ x }}", text: "t {% if %}" });
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as trs_0+\d+$/);
    // A relayed message is finished content: sent as given, never rendered as Liquid.
    expect(sent.at(-1)!.content).toMatchObject({ case: "raw", value: { subject: "s {{ x }}", asGiven: true } });
    expect(sent.at(-1)!.content!.value.text).toContain("t {% if %}");
  });

  it.skipIf(!external)("refuses AUTH in clear from another address with 538 5.7.11, before the key is checked", async () => {
    const err = await send(external!, { from: "a@acme.test", to: "x@example.test", subject: "s", text: "t" }).catch((e) => e);
    expect(err.responseCode).toBe(538);
    expect(err.response).toMatch(/^538 5\.7\.11 Encryption required/);
  });

  it(`takes at most ${MAX_RECIPIENTS} recipients per message (452 for the others)`, async () => {
    sent.length = 0;
    const to = Array.from({ length: MAX_RECIPIENTS + 2 }, (_, i) => `r${i}@example.test`);
    const info = await send("127.0.0.1", { from: "a@acme.test", to, subject: "s", text: "t" });
    expect(info.accepted).toHaveLength(MAX_RECIPIENTS);
    expect(info.rejected).toHaveLength(2);
    expect(sent).toHaveLength(MAX_RECIPIENTS);
  });

  it("refuses a wrong key with 535 and limits failed attempts per address (454)", async () => {
    const err = await send("127.0.0.1", { from: "a@acme.test", to: "x@example.test", subject: "s", text: "t" }, "mr_wrong_key_1").catch((e) => e);
    expect(err.response).toMatch(/^535 5\.7\.8 /);
    const failures = new AddressAttempts(2);
    expect([failures.attempt("10.0.0.1").ok, failures.attempt("10.0.0.1").ok, failures.attempt("10.0.0.1").ok]).toEqual([true, true, false]);
    failures.refund("10.0.0.1");
    expect(failures.attempt("10.0.0.1").ok).toBe(true);
  });
});

describe("replyOf", () => {
  const coded = (code: string, httpStatus: number, more = {}) => toConnectError(new AppError({ code, httpStatus, message: `${code} happened`, ...more }));
  it("maps the email service's answers to SMTP replies", () => {
    expect(replyOf(new ConnectError("connect ECONNREFUSED", Code.Unavailable))).toMatchObject({ code: 451 });
    expect(replyOf(new Error("socket hang up"))).toMatchObject({ code: 451 });
    expect(replyOf(coded("internal", 500))).toMatchObject({ code: 451 });
    expect(replyOf(coded("invalid_from", 400, { allowedDomains: ["acme.test", "acme.org"], allowedEmails: ["me@gmail.test"] })).message)
      .toBe("5.7.1 invalid_from happened; verified domains: acme.test, acme.org; verified addresses: me@gmail.test");
    expect(replyOf(coded("attachments_too_large", 400))).toMatchObject({ code: 552 });
    expect(replyOf(coded("too_many_recipients", 400))).toMatchObject({ code: 550, message: expect.stringMatching(/^5\.5\.3/) });
    expect(replyOf(coded("monthly_limit_reached", 403))).toMatchObject({ code: 550, message: expect.stringMatching(/^5\.7\.0/) });
    expect(replyOf(coded("idempotency_request_in_progress", 409))).toMatchObject({ code: 451 });
    expect(replyOf(coded("header_not_allowed", 400))).toMatchObject({ code: 550, message: "5.6.0 header_not_allowed: header_not_allowed happened" });
  });
});

describe("Submitter", () => {
  it("names the emails already sent when a later one is refused for good", async () => {
    let calls = 0;
    const refusing = {
      async sendEmail() {
        calls++;
        if (calls === 2) throw toConnectError(new AppError({ code: "invalid_request", httpStatus: 400, message: "to is not a valid email address" }));
        return { email: { id: "trs_00000000000000000000000001" } };
      },
    } as unknown as Client<typeof EmailService>;
    const raw = Buffer.from("From: a@acme.test\r\nTo: x@example.test, y@example.test\r\nSubject: s\r\n\r\nhi\r\n");
    const reply = await new Submitter(refusing, quiet).submit("ws_1", { mailFrom: "a@acme.test", rcptTo: ["x@example.test", "y@example.test"] }, raw);
    expect(reply).toEqual({
      code: 550,
      message: "5.6.0 invalid_request: to is not a valid email address (to y@example.test; already sent: trs_00000000000000000000000001)",
    });
  });
});
