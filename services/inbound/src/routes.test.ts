import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "@mailroom/kit";
import { createClient } from "@connectrpc/connect";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { sesTagValue } from "@mailroom/pipeline/relay-providers.js";
import { InboundService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { ProviderWebhooks } from "./adapters/providers/index.js";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { FixedSigningCertificate, HttpsSigningCertificates, snsUrl } from "./adapters/providers/sns.js";
import { inboundRoutes, rpcLogger } from "./routes.js";
import { loadInboundSettings } from "./settings.js";
import {
  MAILGUN_TEST_SIGNING_KEY, SENDGRID_TEST_PUBLIC_KEY, SES_TEST_TOPIC, SNS_TEST_CERT_FILE,
  basicAuth, mailgunSigned, providerFixture, sendgridHeaders, sentDelivery, snsMessage, testInbound,
} from "./testing.js";

/**
 * InboundService.ReceiveProviderWebhook over the inbound domain in memory: each provider's
 * recorded payload shapes (from its public documentation, under fixtures/providers) become
 * the same suppressions and events as a DSN or an ARF report; forged requests are refused.
 */

const DELIVERY = sentDelivery({ route: "ses-eu", otherRecipients: ["cc@example.test"] });
const { deliveryId, messageId } = DELIVERY;

const TEST_CERT = readFileSync(SNS_TEST_CERT_FILE, "utf8");

function world(env: Record<string, string> = {}, certificatePem = TEST_CERT) {
  const t = testInbound();
  void t.sent.remember(DELIVERY);
  const settings = loadInboundSettings({
    MAILROOM_SES_TOPIC_ARNS: SES_TEST_TOPIC,
    MAILROOM_POSTMARK_WEBHOOK_AUTH: "mailroom:s3cret-pass",
    MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: SENDGRID_TEST_PUBLIC_KEY,
    MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: MAILGUN_TEST_SIGNING_KEY,
    ...env,
  });
  const confirmed: string[] = [];
  const fetchedCertificates: string[] = [];
  const file = new FixedSigningCertificate(certificatePem);
  const warnings: Array<Record<string, unknown>> = [];
  const webhooks = new ProviderWebhooks({
    settings: settings.providers,
    certificates: { get: (url) => (fetchedCertificates.push(url.href), file.get()) },
    confirmer: { confirm: async (url) => void confirmed.push(url.href) },
    now: () => new Date(),
    logger: { debug() {}, info() {}, error() {}, warn: (obj) => void warnings.push(obj as Record<string, unknown>) },
  });
  const client = createClient(InboundService, memoryTransport(inboundRoutes(webhooks, t.inbound)));
  const post = (provider: string, body: string, headers: Record<string, string> = {}) =>
    client.receiveProviderWebhook({ provider, body: new TextEncoder().encode(body), headers: Object.entries(headers).map(([name, value]) => ({ name, value })), path: `/webhooks/${provider}` });
  const refusal = (provider: string, body: string, headers: Record<string, string> = {}) =>
    post(provider, body, headers).then(() => undefined, (err) => ({ code: errorInfoOf(err)?.code, status: errorInfoOf(err)?.httpStatus, message: errorInfoOf(err)?.message }));
  return { ...t, post, refusal, confirmed, fetchedCertificates, warnings };
}

describe("Amazon SES (SNS)", () => {
  it("turns a Permanent bounce into a hard bounce, the delivery named by its X-Mailroom-Delivery-Id header; a redelivery is the same event", async () => {
    const w = world();
    const body = snsMessage(providerFixture("ses-bounce.json", { deliveryId, messageId: "not-ours@example.test" }));
    expect(await w.post("ses", body)).toMatchObject({ accepted: 1, ignored: 0, subscriptionConfirmed: false });
    await w.post("ses", body);
    expect(w.suppressions.suppressed).toContainEqual(expect.objectContaining({ email: "ann@example.test", reason: "hard_bounce" }));
    expect(w.events.events).toHaveLength(2);
    expect(w.events.events[0]).toMatchObject({
      type: "bounced", deliveryId, recipient: "ann@example.test", permanent: true, enhancedStatus: "5.1.1", smtpCode: 550,
      detail: "smtp; 550 5.1.1 user unknown", route: "ses-eu",
    });
    expect(w.events.events[1].eventId).toBe(w.events.events[0].eventId);
  });

  it("finds a complaint's message by its Message-ID and suppresses the address", async () => {
    const w = world();
    const res = await w.post("ses", snsMessage(providerFixture("ses-complaint.json", { messageId }), { signatureVersion: "2" }));
    expect(res).toMatchObject({ accepted: 1 });
    expect(w.suppressions.suppressed).toEqual([expect.objectContaining({ email: "ann@example.test", reason: "complaint" })]);
    expect(w.events.events[0]).toMatchObject({ type: "complained", deliveryId, detail: "feedback-type abuse from AnyCompany Feedback Loop (V0.01)" });
  });

  it("reads an event-publishing Delivery (the delivery id in mail.tags) as DELIVERED", async () => {
    const w = world();
    expect(await w.post("ses", snsMessage(providerFixture("ses-delivery-event.json", { deliveryId })))).toMatchObject({ accepted: 1 });
    expect(w.events.events).toEqual([expect.objectContaining({ type: "delivered", deliveryId, smtpCode: 250, detail: "250 2.6.0 Message received", route: "ses-eu" })]);
    expect(w.suppressions.suppressed).toEqual([]);
  });

  it("reads a broadcast recipient's delivery id back from its SES-encoded message tag ('.' written -2E)", async () => {
    const w = world();
    const broadcastDelivery = sentDelivery({ deliveryId: "cmp_01jbroadcast.ctc_01jcontact", source: "broadcast", emailId: "", broadcastId: "cmp_01jbroadcast", contactId: "ctc_01jcontact", messageId: "ctc_01jcontact.cmp_01jbroadcast@acme.test" });
    await w.sent.remember(broadcastDelivery);
    const tag = sesTagValue(broadcastDelivery.deliveryId);
    expect(tag).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await w.post("ses", snsMessage(providerFixture("ses-delivery-event.json", { deliveryId: tag })))).toMatchObject({ accepted: 1 });
    expect(w.events.events).toEqual([expect.objectContaining({ type: "delivered", deliveryId: broadcastDelivery.deliveryId, broadcastId: "cmp_01jbroadcast" })]);
  });

  it("soft-bounces a Transient bounce of a cc without touching the email's own status", async () => {
    const w = world();
    const bounce = JSON.parse(providerFixture("ses-bounce.json", { deliveryId, rcpt: "cc@example.test" }));
    bounce.bounce.bounceType = "Transient";
    bounce.bounce.bouncedRecipients[0].status = "4.2.2";
    expect(await w.post("ses", snsMessage(JSON.stringify(bounce)))).toMatchObject({ accepted: 1 });
    expect(w.events.events).toEqual([]);
    expect(w.suppressions.suppressed).toEqual([]);
  });

  it("reads an event-publishing DeliveryDelay (SES keeps trying) as DEFERRED, nothing suppressed", async () => {
    const w = world();
    const delay = {
      eventType: "DeliveryDelay",
      mail: { timestamp: "2026-11-20T10:15:01.000Z", source: "team@acme.test", messageId: "0100019a-ses-own-id", destination: ["ann@example.test"], headers: [], commonHeaders: {}, tags: { mailroom_delivery_id: [deliveryId] } },
      deliveryDelay: {
        timestamp: "2026-11-20T10:20:00.000Z", delayType: "TransientCommunicationFailure", expirationTime: "2026-11-20T23:15:01.000Z",
        delayedRecipients: [{ emailAddress: "ann@example.test", status: "4.4.1", diagnosticCode: "smtp; 421 4.4.0 Unable to lookup DNS for example.test" }],
      },
    };
    expect(await w.post("ses", snsMessage(JSON.stringify(delay)))).toMatchObject({ accepted: 1 });
    expect(w.events.events).toEqual([expect.objectContaining({ type: "deferred", deliveryId, smtpCode: 421, enhancedStatus: "4.4.1", permanent: false })]);
    expect(w.suppressions.suppressed).toEqual([]);
  });

  it("confirms a subscription of an allowed topic by GETting its SubscribeURL", async () => {
    const w = world();
    const res = await w.post("ses", snsMessage("You have chosen to subscribe to the topic …", { type: "SubscriptionConfirmation" }));
    expect(res).toMatchObject({ subscriptionConfirmed: true, accepted: 0 });
    expect(w.confirmed).toHaveLength(1);
    expect(w.confirmed[0]).toMatch(/^https:\/\/sns\.us-east-1\.amazonaws\.com\/\?Action=ConfirmSubscription/);
  });

  it("refuses forged or foreign messages alike (the reason only in the log), and never confirms another topic's subscription", async () => {
    const w = world();
    const refused = { code: "provider_webhook_unauthenticated", status: 401, message: "ses webhook refused: the SNS message is not signed by Amazon SNS for a topic in MAILROOM_SES_TOPIC_ARNS" };
    const reason = () => String(w.warnings.at(-1)?.reason);
    const good = snsMessage(providerFixture("ses-bounce.json", { deliveryId }));
    const tampered = good.replace("Permanent", "Transient");
    expect(await w.refusal("ses", tampered)).toEqual(refused);
    expect(reason()).toMatch(/signature does not verify/);
    const otherKey = (await import("node:crypto")).generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(await w.refusal("ses", snsMessage("{}", { key: otherKey }))).toEqual(refused);
    const foreign = snsMessage("{}", { type: "SubscriptionConfirmation", topicArn: "arn:aws:sns:us-east-1:999999999999:attacker" });
    expect(await w.refusal("ses", foreign)).toEqual(refused);
    expect(reason()).toMatch(/not in MAILROOM_SES_TOPIC_ARNS/);
    for (const certUrl of [
      "https://sns.us-east-1.amazonaws.com.evil.test/cert.pem", "http://sns.us-east-1.amazonaws.com/cert.pem", "https://evil.test/sns.us-east-1.amazonaws.com.pem",
      "https://sns.us-east-1.amazonaws.com/any/path.pem",
      // S3 buckets named "sns": Amazon's hosts and certificates, anyone's content.
      "https://sns.s3.amazonaws.com/SimpleNotificationService-0000.pem", "https://sns.s3-us-west-2.amazonaws.com/SimpleNotificationService-0000.pem",
      "https://sns.execute-api.amazonaws.com/SimpleNotificationService-0000.pem", "https://sns.cn-north-1.amazonaws.com/SimpleNotificationService-0000.pem",
    ]) {
      expect(await w.refusal("ses", snsMessage("{}", { certUrl })), certUrl).toEqual(refused);
      expect(reason(), certUrl).toMatch(/SigningCertURL/);
    }
    expect(w.fetchedCertificates.every((u) => u === "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem")).toBe(true);
    expect(w.confirmed).toEqual([]);
    expect(w.events.events).toEqual([]);
  });

  it("ignores SES's plain-text test notification and a report naming no remembered delivery", async () => {
    const w = world();
    expect(await w.post("ses", snsMessage("Successfully validated SNS topic for Amazon SES event publishing."))).toMatchObject({ accepted: 0, ignored: 1 });
    expect(await w.post("ses", snsMessage(providerFixture("ses-bounce.json", { deliveryId: "trs_unknown", messageId: "unknown@x.test" })))).toMatchObject({ accepted: 0, ignored: 1 });
    expect(w.events.events).toEqual([]);
  });

  it("refuses a body that is not an SNS message with 400", async () => {
    const w = world();
    expect(await w.refusal("ses", "not json")).toMatchObject({ code: "invalid_provider_webhook", status: 400 });
    expect(await w.refusal("ses", JSON.stringify({ Type: "Notification" }))).toMatchObject({ code: "invalid_provider_webhook", status: 400 });
  });
});

describe("Postmark", () => {
  const auth = { authorization: basicAuth("mailroom", "s3cret-pass") };

  it("turns HardBounce, SpamComplaint and Delivery webhooks into their events by Metadata.mailroom_delivery_id", async () => {
    const w = world();
    expect(await w.post("postmark", providerFixture("postmark-delivery.json", { deliveryId }), auth)).toMatchObject({ accepted: 1 });
    expect(await w.post("postmark", providerFixture("postmark-bounce.json", { deliveryId }), auth)).toMatchObject({ accepted: 1 });
    expect(await w.post("postmark", providerFixture("postmark-spam-complaint.json", { deliveryId }), auth)).toMatchObject({ accepted: 1 });
    expect(w.events.events.map((e) => e.type)).toEqual(["delivered", "bounced", "complained"]);
    expect(w.events.events[1]).toMatchObject({ permanent: true, smtpCode: 550, enhancedStatus: "5.1.1" });
    expect(w.suppressions.suppressed.map((s) => s.reason)).toEqual(["hard_bounce", "complaint"]);
  });

  it("refuses missing or wrong basic auth", async () => {
    const w = world();
    const body = providerFixture("postmark-bounce.json", { deliveryId });
    expect(await w.refusal("postmark", body)).toMatchObject({ code: "provider_webhook_unauthenticated", status: 401 });
    expect(await w.refusal("postmark", body, { authorization: basicAuth("mailroom", "guess") })).toMatchObject({ status: 401 });
    expect(w.events.events).toEqual([]);
  });
});

describe("SendGrid", () => {
  it("reads a signed event batch: deferred (SendGrid retries), bounce, delivered and spamreport recorded, processed ignored", async () => {
    const w = world();
    const body = providerFixture("sendgrid-events.json", { deliveryId, messageId });
    expect(await w.post("sendgrid", body, sendgridHeaders(body))).toMatchObject({ accepted: 4, ignored: 1 });
    expect(w.events.events.map((e) => e.type)).toEqual(["deferred", "bounced", "delivered", "complained"]);
    expect(w.events.events[0]).toMatchObject({ smtpCode: 400, permanent: false, detail: "400 try again later (sendgrid retries)" });
    expect(w.events.events[1]).toMatchObject({ permanent: true, enhancedStatus: "5.0.0", smtpCode: 500, detail: "500 unknown recipient" });
  });

  it("asks for a retry (503) of a fresh SendGrid report naming a delivery not remembered yet, after handling the rest of the batch", async () => {
    const w = world();
    const events = JSON.parse(providerFixture("sendgrid-events.json", { deliveryId, messageId }));
    // Beat its SENT event: a minute old (the test clock's now is 2026-11-22T12:00:00Z).
    const fresh = { ...events[2], mailroom_delivery_id: "trs_not_consumed_yet", "smtp-id": "<not-yet@acme.test>", timestamp: Date.parse("2026-11-22T11:59:00Z") / 1000 };
    const body = JSON.stringify([events[3], fresh]);
    expect(await w.refusal("sendgrid", body, sendgridHeaders(body))).toMatchObject({ code: "unknown_delivery", status: 503, message: expect.stringMatching(/trs_not_consumed_yet/) });
    expect(w.events.events.map((e) => e.type)).toEqual(["delivered"]);
    // Older than the window, or naming only a Message-ID (another system's mail through the same account): ignored.
    const old = JSON.stringify([{ ...fresh, timestamp: Date.parse("2026-11-22T11:30:00Z") / 1000 }, { ...fresh, mailroom_delivery_id: undefined, "smtp-id": "<x@other.test>" }]);
    expect(await w.post("sendgrid", old, sendgridHeaders(old))).toMatchObject({ accepted: 0, ignored: 2 });
  });

  it("refuses a forged or missing signature", async () => {
    const w = world();
    const body = providerFixture("sendgrid-events.json", { deliveryId, messageId });
    const headers = sendgridHeaders(body);
    expect(await w.refusal("sendgrid", body.replace("bounce", "dropped"), headers)).toMatchObject({ code: "provider_webhook_unauthenticated", status: 401 });
    expect(await w.refusal("sendgrid", body)).toMatchObject({ status: 401 });
    expect(await w.refusal("sendgrid", body, { ...headers, "x-twilio-email-event-webhook-timestamp": "1" })).toMatchObject({ status: 401 });
    expect(w.events.events).toEqual([]);
  });
});

describe("Mailgun", () => {
  it("reads failed (permanent), delivered (by Message-ID) and complained events", async () => {
    const w = world();
    expect(await w.post("mailgun", mailgunSigned(providerFixture("mailgun-failed.json", { deliveryId })))).toMatchObject({ accepted: 1 });
    expect(await w.post("mailgun", mailgunSigned(providerFixture("mailgun-delivered.json", { messageId })))).toMatchObject({ accepted: 1 });
    expect(await w.post("mailgun", mailgunSigned(providerFixture("mailgun-complained.json", { messageId })))).toMatchObject({ accepted: 1 });
    expect(w.events.events.map((e) => e.type)).toEqual(["bounced", "delivered", "complained"]);
    expect(w.events.events[0]).toMatchObject({ permanent: true, smtpCode: 550, enhancedStatus: "5.1.1", detail: "No Such User Here" });
  });

  it("reads a temporary failure (Mailgun retries) as DEFERRED, not a bounce: nothing suppressed, the later delivered report recorded", async () => {
    const w = world();
    const failed = JSON.parse(providerFixture("mailgun-failed.json", { deliveryId }));
    failed["event-data"].severity = "temporary";
    failed["event-data"]["delivery-status"] = { code: 452, message: "4.2.2 mailbox full, try later", "attempt-no": 1 };
    const body = mailgunSigned(JSON.stringify(failed));
    expect(await w.post("mailgun", body)).toMatchObject({ accepted: 1, ignored: 0 });
    await w.post("mailgun", body);
    expect(await w.post("mailgun", mailgunSigned(providerFixture("mailgun-delivered.json", { messageId })))).toMatchObject({ accepted: 1 });
    expect(w.events.events.map((e) => e.type)).toEqual(["deferred", "deferred", "delivered"]);
    expect(w.events.events[1].eventId).toBe(w.events.events[0].eventId);
    expect(w.events.events[0]).toMatchObject({ deliveryId, smtpCode: 452, enhancedStatus: "4.2.2", permanent: false, detail: "4.2.2 mailbox full, try later (mailgun retries)" });
    expect(w.suppressions.suppressed).toEqual([]);
  });

  it("refuses a forged signature and one more than a day old", async () => {
    const w = world();
    const fixture = providerFixture("mailgun-failed.json", { deliveryId });
    expect(await w.refusal("mailgun", mailgunSigned(fixture, "key-wrong"))).toMatchObject({ code: "provider_webhook_unauthenticated", status: 401 });
    expect(await w.refusal("mailgun", mailgunSigned(fixture, MAILGUN_TEST_SIGNING_KEY, new Date(Date.now() - 25 * 3600_000)))).toMatchObject({ status: 401 });
    expect(w.events.events).toEqual([]);
  });
});

describe("every provider", () => {
  it("answers 404 for a provider that is not configured, and 400 for a malformed body", async () => {
    const w = world({ MAILROOM_SES_TOPIC_ARNS: "", MAILROOM_POSTMARK_WEBHOOK_AUTH: "", MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: "", MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: "" });
    for (const provider of ["ses", "postmark", "sendgrid", "mailgun", "azure"]) {
      expect(await w.refusal(provider, "{}"), provider).toMatchObject({ code: "provider_webhook_not_configured", status: 404 });
    }
    const configured = world();
    expect(await configured.refusal("mailgun", "[]")).toMatchObject({ code: "invalid_provider_webhook", status: 400 });
    expect(await configured.refusal("postmark", "{", { authorization: basicAuth("mailroom", "s3cret-pass") })).toMatchObject({ status: 400 });
  });
});

describe("the Connect server's log", () => {
  it("logs the expected 'not recorded yet, retry' 503 at info without a stack, every other failure at error", () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) });
    const logger = rpcLogger(createLogger("inbound-test", "info", sink));
    // As kit's interceptor logs a failed call.
    logger.error({ requestId: "r1", rpc: "ReceiveProviderWebhook", code: "unknown_delivery" }, "rpc failed");
    logger.error({ requestId: "r2", rpc: "ReceiveProviderWebhook", code: "service_unavailable" }, "rpc failed");
    logger.info({ requestId: "r3" }, "other");
    expect(lines.map((l) => [l.requestId, l.level])).toEqual([["r1", 30], ["r2", 50], ["r3", 30]]);
    expect(lines[0]).toMatchObject({ code: "unknown_delivery", msg: "rpc answered: retry later (not recorded yet)" });
    expect(JSON.stringify(lines[0])).not.toContain("stack");
  });
});

describe("SNS certificates", () => {
  it("takes certificate URLs on SNS's regional hosts only", () => {
    for (const host of ["sns.us-east-1.amazonaws.com", "sns.eu-west-2.amazonaws.com", "sns.ap-southeast-1.amazonaws.com", "sns.us-gov-west-1.amazonaws.com", "sns.cn-north-1.amazonaws.com.cn", "sns.il-central-1.amazonaws.com"]) {
      expect(snsUrl(`https://${host}/SimpleNotificationService-abc.pem`), host).toBeDefined();
    }
    for (const host of ["sns.s3.amazonaws.com", "sns.s3-us-west-2.amazonaws.com", "sns.amazonaws.com", "sns.us-east-1.amazonaws.com.cn", "sns.cn-north-1.amazonaws.com", "sns.us-east.amazonaws.com", "sns.elb.us-east-1.amazonaws.com"]) {
      expect(snsUrl(`https://${host}/SimpleNotificationService-abc.pem`), host).toBeUndefined();
    }
  });

  it("refuses a certificate that is not issued to sns.amazonaws.com, though it signs the message", async () => {
    const { execFileSync } = await import("node:child_process");
    const { mkdtempSync, readFileSync: read } = await import("node:fs");
    const dir = mkdtempSync(path.join(os.tmpdir(), "sns-cert-"));
    const key = path.join(import.meta.dirname, "fixtures", "sns-test-signing-key.pem");
    execFileSync("openssl", ["req", "-new", "-x509", "-key", key, "-days", "2", "-subj", "/CN=sns.s3.amazonaws.com", "-out", path.join(dir, "cert.pem")]);
    const w = world({}, read(path.join(dir, "cert.pem"), "utf8"));
    expect(await w.refusal("ses", snsMessage(providerFixture("ses-bounce.json", { deliveryId })))).toMatchObject({ status: 401 });
    expect(String(w.warnings.at(-1)?.reason)).toMatch(/not issued to sns\.amazonaws\.com/);
    expect(w.events.events).toEqual([]);
  });

  it("remembers a failed certificate fetch for a while: forged messages naming one URL fetch it once", async () => {
    const fetched: string[] = [];
    const certificates = new HttpsSigningCertificates(async (url) => {
      fetched.push(url.href);
      throw new Error("404");
    });
    const url = new URL("https://sns.us-east-1.amazonaws.com/SimpleNotificationService-forged.pem");
    for (let i = 0; i < 3; i++) await expect(certificates.get(url)).rejects.toThrow("404");
    expect(fetched).toHaveLength(1);
  });
});
