/**
 * DESIGN §10.4's forward, end to end over real SMTP: a message mailed to the inbound unit for a
 * `forward` rule (its domain verified by MX on a real DNS server on loopback) goes through the
 * email service and delivery and reaches the relay (the SMTP sink) byte for byte as it came (a
 * Received trace header in front), its original From and DKIM-Signature intact, from an SRS0
 * envelope sender that reverses to the original sender; a bounce to that SRS address is taken,
 * a forged one refused. The forward is an email of the log, and a suppressed target is not sent to.
 */
import nodemailer from "nodemailer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "@mailroom/kit/connect.js";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailServiceForwarder } from "../../services/inbound/src/adapters/forwarder.js";
import { srsReverse } from "../../services/inbound/src/domain/srs.js";
import type { TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startMxServer, type MxZone } from "../../services/inbound/src/dns-testing.js";

const WS = "ws_forward";
const KEY = "mr_test_forward_1";
const SRS_DOMAIN = "bounces.fwd.test";
const MX_HOST = "mx.fwd-mailroom.test";

/** A message as another provider sent it: signed by its own domain, with a body that must arrive untouched. */
function originalMessage(id: string): string {
  return [
    "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sender.example; s=s1;",
    " h=from:to:subject:date:message-id; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=;",
    " b=dGhpcyBpcyBub3QgYSByZWFsIHNpZ25hdHVyZSBidXQgaXQgbXVzdCBzdXJ2aXZl",
    "From: =?UTF-8?Q?Ann_L=C3=A9e?= <ann@sender.example>",
    "To: support@in.fwd.test",
    `Subject: =?UTF-8?Q?Need_help_=E2=80=94_order?= ${id}`,
    "Date: Sun, 29 Nov 2026 10:00:00 +0000",
    `Message-ID: <${id}@sender.example>`,
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: 8bit",
    "",
    "Hello, café ☕.",
    ".a line that starts with a dot (dot-stuffed on the wire, not in the message)",
    "",
    "--b1",
    "Content-Type: application/octet-stream; name=data.bin",
    "Content-Transfer-Encoding: base64",
    "",
    Buffer.alloc(3000, 7).toString("base64").replace(/.{76}/g, "$&\r\n"),
    "--b1--",
    "",
  ].join("\r\n");
}

describe("forwarding a received message through the send path", () => {
  let sys: TestSystem;
  let forwarder: EmailServiceForwarder;
  let email: ReturnType<typeof connectClient<typeof EmailService>>;
  let contacts: ReturnType<typeof connectClient<typeof ContactService>>;
  const zone: MxZone = new Map();
  let dns: Awaited<ReturnType<typeof startMxServer>>;

  beforeAll(async () => {
    dns = await startMxServer(zone);
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: WS, name: "Forward", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["fwd.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "inbound", "gateway"],
      env: {
        MAILROOM_BOUNCE_DOMAIN: SRS_DOMAIN,
        MAILROOM_INBOUND_MX_HOST: MX_HOST,
        MAILROOM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        MAILROOM_INBOUND_SPAM_MAX_BYTES: "0",
      },
    });
    email = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    forwarder = new EmailServiceForwarder(email, { secret: sys.secret, domain: SRS_DOMAIN });
  }, 180_000);
  afterAll(async () => {
    await sys?.stop();
    await dns?.close();
  });

  /** One SMTP transaction to the inbound unit. */
  const mailIn = (envelope: { from: string; to: string }, raw: string) => {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: sys.ports.inbound, secure: false, ignoreTLS: true });
    return transport.sendMail({ envelope, raw }).finally(() => transport.close());
  };

  it("a message mailed to a forward rule arrives at the target verbatim, from an SRS0 sender; bounces to that sender are taken", async () => {
    zone.set("in.fwd.test", [{ exchange: `${MX_HOST}.`, priority: 10 }]);
    const domain = await sys.api("POST", "/v1/inbound/domains", { key: KEY, body: { domain: "in.fwd.test" } });
    expect(domain.status, JSON.stringify(domain.body)).toBe(201);
    expect(domain.body.domain.status).toBe("verified");
    const rule = await sys.api("POST", `/v1/inbound/domains/${domain.body.domain.id}/rules`, { key: KEY, body: { match: "support", action: "forward", forwardTo: "team@elsewhere.example" } });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);

    const raw = originalMessage("smtp1");
    await mailIn({ from: "ann@sender.example", to: "support@in.fwd.test" }, raw);
    const [got] = await sys.sink!.waitFor(1, 30_000).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n${await sys.log("inbound")}\n${await sys.log("email")}`);
    });
    expect(got!.to).toEqual(["team@elsewhere.example"]);
    expect(got!.from).toMatch(/^SRS0=[a-z2-7]{6}=[a-z2-7]{2}=sender\.example=ann@bounces\.fwd\.test$/);
    expect(srsReverse(sys.secret, got!.from)).toBe("ann@sender.example");
    const [trace, ...rest] = got!.raw.split(/\r\n(?![ \t])/);
    expect(trace).toMatch(/^Received: by bounces\.fwd\.test \(Mailroom\) id rcv_\S+\r\n\tfor <team@elsewhere\.example>;/);
    expect(rest.join("\r\n")).toBe(raw);

    // The received email names its forward, an email of the log from the original sender.
    const list = await sys.api("GET", "/v1/received-emails?to=support@in.fwd.test", { key: KEY });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    const received = JSON.stringify(list.body);
    const emailId = /"(trs_[A-Za-z0-9]+)"/.exec(received)?.[1];
    expect(emailId, received).toBeDefined();
    const record = (await email.getEmail({ workspaceId: WS, id: emailId! })).email!;
    expect(record).toMatchObject({ to: "team@elsewhere.example", from: "Ann Lée <ann@sender.example>", subject: "Need help — order smtp1" });

    // The next hop's bounce to the SRS address is ours (taken, dropped); a forged SRS address is refused.
    const dsn = "From: MAILER-DAEMON@elsewhere.example\r\nSubject: Undelivered Mail\r\n\r\nteam@elsewhere.example: mailbox full\r\n";
    await expect(mailIn({ from: "", to: got!.from }, dsn)).resolves.toBeDefined();
    await expect(mailIn({ from: "", to: got!.from.replace("=ann@", "=bob@") }, dsn)).rejects.toMatchObject({ responseCode: 550 });
    await new Promise((r) => setTimeout(r, 300));
    expect(sys.sink!.messages).toHaveLength(1);
  });

  it("the forwarder's send: verbatim from an SRS0 sender that reverses to the original one, an email of the log, sent once", async () => {
    sys.sink!.reset();
    const raw = originalMessage("m1");
    const { emailId } = await forwarder.forward({
      workspaceId: WS, receivedId: "rcv_fwd_1", to: "Team@Elsewhere.example", mailFrom: "ann@sender.example", raw: Buffer.from(raw, "utf8"),
    });
    const [got] = await sys.sink!.waitFor(1, 30_000);
    expect(got!.to).toEqual(["Team@Elsewhere.example"]);
    expect(got!.from).toMatch(/^SRS0=[a-z2-7]{6}=[a-z2-7]{2}=sender\.example=ann@bounces\.fwd\.test$/);
    expect(srsReverse(sys.secret, got!.from)).toBe("ann@sender.example");
    // One trace header in front, then the message exactly as it came (original From, DKIM-Signature, body).
    const [trace, ...rest] = got!.raw.split(/\r\n(?![ \t])/);
    expect(trace).toMatch(/^Received: by bounces\.fwd\.test \(Mailroom\) id rcv_fwd_1\r\n\tfor <Team@Elsewhere\.example>;\r\n\t\w{3}, \d{2} \w{3} \d{4} [\d:]{8} \+0000$/);
    expect(rest.join("\r\n")).toBe(raw);
    expect(got!.raw).not.toMatch(/X-Mailroom-Delivery-Id/i);

    // The email log: a raw email from the original sender, with the decoded subject, delivered.
    let record = (await email.getEmail({ workspaceId: WS, id: emailId })).email!;
    for (let i = 0; i < 100 && record.status !== EmailStatus.DELIVERED; i++) {
      await new Promise((r) => setTimeout(r, 100));
      record = (await email.getEmail({ workspaceId: WS, id: emailId })).email!;
    }
    expect(record).toMatchObject({ type: "raw", to: "Team@Elsewhere.example", from: "Ann Lée <ann@sender.example>", subject: "Need help — order m1", status: EmailStatus.DELIVERED });

    // A retried forward (the same received email and target) is the same email, not a second send.
    const again = await forwarder.forward({
      workspaceId: WS, receivedId: "rcv_fwd_1", to: "Team@Elsewhere.example", mailFrom: "ann@sender.example", raw: Buffer.from(raw, "utf8"),
    });
    expect(again.emailId).toBe(emailId);
    await new Promise((r) => setTimeout(r, 500));
    expect(sys.sink!.messages).toHaveLength(1);
  });

  it("forwards a large message (12 MB: many content-store parts, over NATS's 1 MB payload) byte for byte", async () => {
    sys.sink!.reset();
    const big = originalMessage("big").replace("--b1--", `--b1\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.alloc(9 * 1024 * 1024, 42).toString("base64").replace(/.{76}/g, "$&\r\n")}\r\n--b1--`);
    expect(big.length).toBeGreaterThan(12_000_000);
    await forwarder.forward({ workspaceId: WS, receivedId: "rcv_fwd_big", to: "big@elsewhere.example", mailFrom: "ann@sender.example", raw: Buffer.from(big, "utf8") });
    const [got] = await sys.sink!.waitFor(1, 60_000);
    expect(got!.raw.slice(got!.raw.indexOf("DKIM-Signature:"))).toBe(big);
  }, 90_000);

  it("forwards a bounce (the null sender) with the null sender", async () => {
    sys.sink!.reset();
    await forwarder.forward({ workspaceId: WS, receivedId: "rcv_fwd_2", to: "team@elsewhere.example", mailFrom: "", raw: Buffer.from(originalMessage("m2"), "utf8") });
    const [got] = await sys.sink!.waitFor(1, 30_000);
    expect(got!.from).toBe("");
  });

  it("does not send to a suppressed forward target: the email fails as any send to it would", async () => {
    sys.sink!.reset();
    await contacts.addSuppression({ workspaceId: WS, email: "gone@elsewhere.example", reason: SuppressionReason.HARD_BOUNCE, detail: "test" });
    const { emailId } = await forwarder.forward({
      workspaceId: WS, receivedId: "rcv_fwd_3", to: "gone@elsewhere.example", mailFrom: "ann@sender.example", raw: Buffer.from(originalMessage("m3"), "utf8"),
    });
    const record = (await email.getEmail({ workspaceId: WS, id: emailId })).email!;
    expect(record.status).toBe(EmailStatus.FAILED);
    expect(record.statusReason).toMatch(/suppression/);
    await new Promise((r) => setTimeout(r, 500));
    expect(sys.sink!.messages).toHaveLength(0);
  });

  it("is never built from the public API: a client's email cannot carry a raw message or envelope sender", async () => {
    sys.sink!.reset();
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "a@fwd.test", to: "x@elsewhere.example", subject: "s", html: "<p>h</p>", forwarded: { raw: "RnJvbTogZXZpbA==", envelopeFrom: "evil@x" }, raw: "x", envelopeFrom: "evil@x" },
    });
    // Refused or accepted as an ordinary email; either way nothing the client set is the envelope.
    if (res.status === 200) {
      const [got] = await sys.sink!.waitFor(1, 30_000);
      expect(got!.from).not.toBe("evil@x");
      expect(got!.raw).not.toMatch(/^From: evil/m);
    } else {
      expect(res.status).toBe(400);
    }
  });
});
