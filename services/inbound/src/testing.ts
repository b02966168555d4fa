/**
 * Test helpers: the inbound domain with in-memory adapters that record what they were
 * asked, and the fixture reports under ./fixtures with their placeholders filled in.
 */
import { createHmac, createSign, generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { verpAddress } from "@mailroom/content/verp.js";
import { InboundMail } from "./domain/inbound.js";
import type { InboundEvent, SentDelivery, SuppressionReason } from "./domain/model.js";
import type { MailEvents, SentDeliveries, Suppressions } from "./domain/ports.js";
import { silentLogger } from "@mailroom/kit/testing.js";
export { silentLogger };

export const TEST_SECRET = "inbound-test-secret-0123456789";
export const BOUNCE_DOMAIN = "bounces.mailroom.test";

export class MemorySentDeliveries implements SentDeliveries {
  readonly byId = new Map<string, SentDelivery>();
  async remember(d: SentDelivery) {
    this.byId.set(d.deliveryId, d);
  }
  async find(id: string) {
    return this.byId.get(id) ?? null;
  }
  async findByMessageId(messageId: string) {
    return [...this.byId.values()].find((d) => d.messageId === messageId) ?? null;
  }
}

export class RecordingSuppressions implements Suppressions {
  readonly suppressed: { workspaceId: string; email: string; reason: SuppressionReason; detail: string }[] = [];
  readonly unsubscribedContacts: { workspaceId: string; email: string }[] = [];
  async suppress(workspaceId: string, email: string, reason: SuppressionReason, detail: string) {
    this.suppressed.push({ workspaceId, email, reason, detail });
  }
  async markUnsubscribed(workspaceId: string, email: string) {
    this.unsubscribedContacts.push({ workspaceId, email });
  }
}

export class RecordingEvents implements MailEvents {
  readonly events: InboundEvent[] = [];
  async publish(e: InboundEvent) {
    this.events.push(e);
  }
}

export function sentDelivery(overrides: Partial<SentDelivery> = {}): SentDelivery {
  return {
    deliveryId: "trs_01jd5m3v8k2x9q7w4e6r1t0y3u",
    workspaceId: "ws_acme",
    source: "transactional",
    emailId: "trs_01jd5m3v8k2x9q7w4e6r1t0y3u",
    broadcastId: "",
    messageId: "01jd5m3v8k2x9q7w4e6r1t0y3u@acme.test",
    recipient: "ann@example.test",
    contactId: "",
    groupBy: "receipts",
    sentAt: new Date("2026-11-20T10:15:01Z"),
    ...overrides,
  };
}

export function testInbound(opts: { domains?: string[] } = {}) {
  const sent = new MemorySentDeliveries();
  const suppressions = new RecordingSuppressions();
  const events = new RecordingEvents();
  const inbound = new InboundMail({
    sent,
    suppressions,
    events,
    clock: { now: () => new Date("2026-11-22T12:00:00Z") },
    logger: silentLogger,
    policy: { secret: TEST_SECRET, domains: opts.domains ?? [BOUNCE_DOMAIN] },
  });
  return { inbound, sent, suppressions, events };
}

/**
 * A fixture report with %%VERP%% (the delivery's return path), %%DELIVERY_ID%% and
 * %%RCPT%% filled in.
 */
export function fixture(name: string, vars: { deliveryId: string; secret?: string; rcpt?: string }): string {
  const verp = verpAddress(vars.secret ?? TEST_SECRET, vars.deliveryId, BOUNCE_DOMAIN)!;
  return readFileSync(path.join(import.meta.dirname, "fixtures", name), "utf8")
    .replaceAll("%%VERP%%", verp)
    .replaceAll("%%DELIVERY_ID%%", vars.deliveryId)
    .replaceAll("%%RCPT%%", vars.rcpt ?? `fbl@${BOUNCE_DOMAIN}`);
}

// --- relay provider webhooks (recorded payload shapes under fixtures/providers) -------------

/** A self-signed certificate standing in for SNS's (MAILROOM_TEST_SNS_SIGNING_CERT_FILE), and its key. */
export const SNS_TEST_CERT_FILE = path.join(import.meta.dirname, "fixtures", "sns-test-signing-cert.pem");
const SNS_TEST_KEY = readFileSync(path.join(import.meta.dirname, "fixtures", "sns-test-signing-key.pem"), "utf8");
export const SES_TEST_TOPIC = "arn:aws:sns:us-east-1:123456789012:mailroom-ses-events";
export const SNS_TEST_CERT_URL = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem";

/** A provider payload from fixtures/providers with %%DELIVERY_ID%%, %%MESSAGE_ID%% and %%RCPT%% filled in. */
export function providerFixture(name: string, vars: { deliveryId?: string; messageId?: string; rcpt?: string } = {}): string {
  return readFileSync(path.join(import.meta.dirname, "fixtures", "providers", name), "utf8")
    .replaceAll("%%DELIVERY_ID%%", vars.deliveryId ?? "")
    .replaceAll("%%MESSAGE_ID%%", vars.messageId ?? "")
    .replaceAll("%%RCPT%%", vars.rcpt ?? "ann@example.test");
}

/** An SNS HTTP delivery of `message`, signed as SNS signs (with the test certificate's key unless told otherwise). */
export function snsMessage(
  message: string,
  opts: { type?: "Notification" | "SubscriptionConfirmation"; topicArn?: string; signatureVersion?: "1" | "2"; certUrl?: string; subscribeUrl?: string; key?: string } = {},
): string {
  const type = opts.type ?? "Notification";
  const envelope: Record<string, string> = {
    Type: type,
    MessageId: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
    TopicArn: opts.topicArn ?? SES_TEST_TOPIC,
    Message: message,
    Timestamp: "2026-11-27T04:00:00.000Z",
    SignatureVersion: opts.signatureVersion ?? "1",
    SigningCertURL: opts.certUrl ?? SNS_TEST_CERT_URL,
  };
  if (type === "SubscriptionConfirmation") {
    envelope.Token = "2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736";
    envelope.SubscribeURL = opts.subscribeUrl ?? `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${envelope.TopicArn}&Token=${envelope.Token}`;
  }
  const fields = type === "Notification"
    ? ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
    : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"];
  const toSign = fields.filter((f) => envelope[f] !== undefined).map((f) => `${f}\n${envelope[f]}\n`).join("");
  const algorithm = envelope.SignatureVersion === "2" ? "RSA-SHA256" : "RSA-SHA1";
  envelope.Signature = createSign(algorithm).update(toSign, "utf8").sign(opts.key ?? SNS_TEST_KEY, "base64");
  return JSON.stringify({ ...envelope, UnsubscribeURL: "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=x" });
}

/** A SendGrid signed event webhook's key pair; the public half as SendGrid shows it (base64 DER). */
const sendgridKeys = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
export const SENDGRID_TEST_PUBLIC_KEY = sendgridKeys.publicKey.export({ format: "der", type: "spki" }).toString("base64");

/** The headers SendGrid signs a batch with. */
export function sendgridHeaders(body: string, timestamp = String(Math.floor(Date.now() / 1000))): Record<string, string> {
  const signature = createSign("sha256").update(timestamp + body).sign(sendgridKeys.privateKey, "base64");
  return { "x-twilio-email-event-webhook-signature": signature, "x-twilio-email-event-webhook-timestamp": timestamp };
}

export const MAILGUN_TEST_SIGNING_KEY = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0";

/** A Mailgun fixture with its signature block filled in (signed with `key`, at `at`). */
export function mailgunSigned(fixtureText: string, key = MAILGUN_TEST_SIGNING_KEY, at = new Date()): string {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const token = randomBytes(25).toString("hex");
  const signature = createHmac("sha256", key).update(timestamp + token).digest("hex");
  return fixtureText.replace("%%TIMESTAMP%%", timestamp).replace("%%TOKEN%%", token).replace("%%SIGNATURE%%", signature);
}

/** Postmark's basic auth header for user:password. */
export const basicAuth = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
