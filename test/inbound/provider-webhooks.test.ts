/**
 * Relay provider event webhooks end to end (DESIGN §9.7): the real units (accounts, audience,
 * renderer, email, delivery, inbound, webhooks, gateway) over a real nats-server, mail relayed to an SMTP
 * sink; then the provider's webhook naming the message, POSTed to the gateway as the provider
 * would, bounces the email (FAILED, last event BOUNCED), suppresses the address and fires EMAIL_BOUNCED, as a DSN does.
 * SES's SNS signature is made with a test certificate the inbound unit reads through
 * MAILROOM_TEST_SNS_SIGNING_CERT_FILE (no request reaches AWS).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@connectrpc/connect";
import PostalMime from "postal-mime";
import { connectClient } from "@mailroom/kit";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver } from "../webhooks/receiver.js";
import {
  MAILGUN_TEST_SIGNING_KEY, SES_TEST_TOPIC, SNS_TEST_CERT_FILE, mailgunSigned, providerFixture, snsMessage,
} from "../../services/inbound/src/testing.js";

const KEY = "mr_test_provider_webhooks_1";

/** Polls `read` until `done` holds (or fails with the last value). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value).slice(0, 1500)}`);
    await new Promise((r) => setTimeout(r, 200));
    value = await read();
  }
  return value;
}

describe("relay provider webhooks through the gateway", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let contacts: Client<typeof ContactService>;

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_relay", name: "Relay", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "inbound", "webhooks", "gateway"],
      env: {
        MAILROOM_SES_TOPIC_ARNS: SES_TEST_TOPIC,
        MAILROOM_TEST_SNS_SIGNING_CERT_FILE: SNS_TEST_CERT_FILE,
        MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: MAILGUN_TEST_SIGNING_KEY,
      },
    });
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  }, 180_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  /** Sends one email through the relay (the sink); its id and the headers a provider hands back. */
  async function sendThroughRelay(to: string, count: number) {
    const sent = await sys.api("POST", "/v1/emails", { key: KEY, body: { from: "Acme <team@acme.test>", to, subject: "Hello", html: "<p>Hi</p>" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const messages = await sys.sink!.waitFor(count, 30_000).catch(async (err) => {
      throw new Error(`${err.message}\n--- delivery log ---\n${await sys.log("delivery")}`);
    });
    const parsed = await PostalMime.parse(messages[count - 1].raw);
    const header = (name: string) => parsed.headers.find((h) => h.key === name)?.value.trim() ?? "";
    return { id: sent.body.email.id as string, messageId: header("message-id").replace(/^<|>$/g, ""), deliveryId: header("x-mailroom-delivery-id") };
  }

  /** POSTs a provider webhook until inbound has remembered the SENT delivery it names (until then: 503, or ignored when old). */
  async function postUntilAccepted(provider: string, body: () => string, headers: Record<string, string> = {}) {
    return until(
      async () => {
        const res = await fetch(`${sys.gatewayUrl}/webhooks/${provider}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: body() });
        return { status: res.status, body: await res.json() };
      },
      // 503 (a fresh report whose SENT is not consumed yet) and an ignored report both mean "again".
      (r) => (r.status !== 200 && r.status !== 503) || r.body.accepted > 0,
      20_000,
    );
  }

  async function suppressionOf(email: string) {
    return (await contacts.checkSuppression({ workspaceId: "ws_relay", emails: [email] })).suppressed[0];
  }

  it("an SES bounce notification (SNS, signed) bounces the email, suppresses the address and fires EMAIL_BOUNCED", async () => {
    const created = await sys.api("POST", "/v1/webhooks", { key: KEY, body: { url: receiver.url, events: ["EMAIL_BOUNCED"] } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const mail = await sendThroughRelay("ann@example.test", 1);
    expect(mail.deliveryId).not.toBe("");

    // A forged notification first: refused, nothing recorded.
    const signed = snsMessage(providerFixture("ses-bounce.json", { deliveryId: mail.deliveryId, messageId: mail.messageId, rcpt: "ann@example.test" }));
    const forged = await fetch(`${sys.gatewayUrl}/webhooks/ses`, { method: "POST", headers: { "content-type": "text/plain; charset=UTF-8" }, body: signed.replace("5.1.1", "5.1.2") });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ code: "provider_webhook_unauthenticated" });

    const res = await postUntilAccepted("ses", () => signed, { "content-type": "text/plain; charset=UTF-8" });
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });

    // A hard bounce after the relay's 250, as a DSN makes it: the email failed, its last event BOUNCED.
    const email = await until(async () => (await sys.api("GET", `/v1/emails/${mail.id}`, { key: KEY })).body.email, (e) => e.lastEvent?.type === "BOUNCED" && !!e.events?.bouncedAt);
    expect(email).toMatchObject({
      id: mail.id, status: "FAILED", reason: "Bounced (550): smtp; 550 5.1.1 user unknown",
      events: { deliveredAt: expect.any(String), bouncedAt: expect.any(String), bounceType: "hard" },
    });
    expect(await suppressionOf("ann@example.test")).toMatchObject({ reason: SuppressionReason.HARD_BOUNCE });
    const bounced = await until(async () => receiver.received.filter((r) => r.event.type === "EMAIL_BOUNCED"), (l) => l.length >= 1);
    expect(bounced[0].event).toMatchObject({ workspaceId: "ws_relay", data: { emailId: mail.id } });
  }, 120_000);

  it("a Mailgun permanent failure naming only the Message-ID does the same", async () => {
    const mail = await sendThroughRelay("bob@example.test", 2);
    const fixture = providerFixture("mailgun-failed.json", { messageId: mail.messageId, rcpt: "bob@example.test" }).replace(`"mailroom_delivery_id": ""`, `"other": ""`);
    const res = await postUntilAccepted("mailgun", () => mailgunSigned(fixture));
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });
    const email = await until(async () => (await sys.api("GET", `/v1/emails/${mail.id}`, { key: KEY })).body.email, (e) => e.lastEvent?.type === "BOUNCED" && !!e.events?.bouncedAt);
    expect(email).toMatchObject({ status: "FAILED", reason: "Bounced (550): No Such User Here", events: { bounceType: "hard" } });
    expect(await suppressionOf("bob@example.test")).toMatchObject({ reason: SuppressionReason.HARD_BOUNCE });
    // Postmark and SendGrid are not configured on this server: their endpoints do not exist.
    for (const provider of ["postmark", "sendgrid"]) {
      const off = await fetch(`${sys.gatewayUrl}/webhooks/${provider}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(off.status, provider).toBe(404);
    }
  }, 120_000);
});
