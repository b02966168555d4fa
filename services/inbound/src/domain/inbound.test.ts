import { describe, expect, it } from "vitest";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { verpAddress } from "@mailroom/content/verp.js";
import { BOUNCE_DOMAIN, fixture, sentDelivery, TEST_SECRET, testInbound } from "../testing.js";

const delivery = sentDelivery();
const VERP = verpAddress(TEST_SECRET, delivery.deliveryId, BOUNCE_DOMAIN)!;
const bounceEnvelope = { mailFrom: "", rcptTo: [VERP] };
// A broadcast's own message: its Message-ID is `<contact>.<broadcast>@…` (a test send's is not).
const recipientRef = { workspaceId: "ws_acme", messageId: "ctc_1.cmp_1@acme.test", email: "Bob@Example.test", contactId: "ctc_1", contentId: "cmp_1" };

async function withDelivery(opts?: { domains?: string[] }) {
  const t = testInbound(opts);
  await t.inbound.rememberSent(delivery);
  return t;
}

describe("inbound mail", () => {
  it("suppresses a hard-bounced address and publishes a permanent BOUNCED event", async () => {
    const t = await withDelivery();
    const outcomes = await t.inbound.receive(bounceEnvelope, fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId }));
    expect(outcomes).toEqual([{ kind: "hard-bounce", deliveryId: delivery.deliveryId, recipient: "ann@example.test", status: "5.1.1" }]);
    expect(t.suppressions.suppressed).toEqual([
      { workspaceId: "ws_acme", email: "ann@example.test", reason: "hard_bounce", detail: expect.stringContaining("5.1.1 550 5.1.1") },
    ]);
    expect(t.events.events).toEqual([
      expect.objectContaining({
        type: "bounced", workspaceId: "ws_acme", source: "transactional", deliveryId: delivery.deliveryId, emailId: delivery.emailId,
        messageId: delivery.messageId, recipient: "ann@example.test", groupBy: "receipts", smtpCode: 550, permanent: true, enhancedStatus: "5.1.1",
        eventId: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
      }),
    ]);
  });

  it("suppresses a bounced cc or bcc address it names, without marking the email (its status follows `to`), and carries tags on the email's own bounce", async () => {
    const t = testInbound();
    // The fixture's report names ann@example.test: here a cc of a message to boss@.
    await t.inbound.rememberSent(sentDelivery({ recipient: "boss@example.test", otherRecipients: ["Ann@Example.test", "cfo@example.test"] }));
    const outcomes = await t.inbound.receive(bounceEnvelope, fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId }));
    expect(outcomes).toEqual([{ kind: "hard-bounce", deliveryId: delivery.deliveryId, recipient: "Ann@Example.test", status: "5.1.1" }]);
    expect(t.suppressions.suppressed).toMatchObject([{ workspaceId: "ws_acme", email: "Ann@Example.test", reason: "hard_bounce" }]);
    expect(t.events.events).toEqual([]);

    // A report naming the message's `to` is the email's bounce, as without other recipients, with the email's tags.
    const u = testInbound();
    await u.inbound.rememberSent(sentDelivery({ otherRecipients: ["cfo@example.test"], tags: [{ name: "kind", value: "invoice" }] }));
    await u.inbound.receive(bounceEnvelope, fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId }));
    expect(u.suppressions.suppressed).toMatchObject([{ email: "ann@example.test" }]);
    expect(u.events.events).toMatchObject([{ type: "bounced", recipient: "ann@example.test", tags: [{ name: "kind", value: "invoice" }] }]);
  });

  it("publishes the same event id when the same report arrives again", async () => {
    const t = await withDelivery();
    const raw = fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId });
    await t.inbound.receive(bounceEnvelope, raw);
    await t.inbound.receive(bounceEnvelope, raw);
    expect(new Set(t.events.events.map((e) => e.eventId)).size).toBe(1);
  });

  it("only counts a soft bounce: an event, no suppression", async () => {
    const t = await withDelivery();
    const outcomes = await t.inbound.receive(bounceEnvelope, fixture("dsn-soft-4.2.2.eml", { deliveryId: delivery.deliveryId }));
    expect(outcomes).toMatchObject([{ kind: "soft-bounce", status: "4.2.2" }]);
    expect(t.suppressions.suppressed).toEqual([]);
    expect(t.events.events).toMatchObject([{ type: "bounced", permanent: false, enhancedStatus: "4.2.2", smtpCode: 452 }]);
  });

  it("does nothing for a delay warning", async () => {
    const t = await withDelivery();
    const outcomes = await t.inbound.receive(bounceEnvelope, fixture("dsn-delayed.eml", { deliveryId: delivery.deliveryId }));
    expect(outcomes).toMatchObject([{ kind: "ignored" }]);
    expect(t.suppressions.suppressed).toEqual([]);
    expect(t.events.events).toEqual([]);
  });

  it("treats a plain-text 5.x.x bounce as hard and leaves auto-replies alone", async () => {
    const t = await withDelivery();
    await t.inbound.receive(bounceEnvelope, fixture("auto-reply.eml", { deliveryId: delivery.deliveryId }));
    expect(t.events.events).toEqual([]);
    await t.inbound.receive(bounceEnvelope, fixture("plain-bounce.eml", { deliveryId: delivery.deliveryId }));
    expect(t.suppressions.suppressed).toMatchObject([{ email: "ann@example.test", reason: "hard_bounce" }]);
    expect(t.events.events).toMatchObject([{ type: "bounced", permanent: true, smtpCode: 550 }]);
  });

  it("turns an ARF abuse report to the feedback mailbox into a complaint and a suppression", async () => {
    const t = await withDelivery();
    const outcomes = await t.inbound.receive(
      { mailFrom: "fbl@isp.example.test", rcptTo: [`fbl@${BOUNCE_DOMAIN}`] },
      fixture("arf-abuse.eml", { deliveryId: delivery.deliveryId }),
    );
    expect(outcomes).toEqual([{ kind: "complaint", deliveryId: delivery.deliveryId, recipient: "ann@example.test", feedbackType: "abuse" }]);
    expect(t.suppressions.suppressed).toEqual([
      { workspaceId: "ws_acme", email: "ann@example.test", reason: "complaint", detail: "feedback-type abuse from ExampleFBL/1.0" },
    ]);
    expect(t.events.events).toMatchObject([{ type: "complained", deliveryId: delivery.deliveryId, recipient: "ann@example.test" }]);
  });

  it("suppresses a complaining cc or bcc (the report's Original-Rcpt-To), not the email's `to`, and publishes no event of the email", async () => {
    const t = testInbound();
    // The fixture's report names ann@example.test: here a bcc of a message to boss@.
    await t.inbound.rememberSent(sentDelivery({ recipient: "boss@example.test", otherRecipients: ["cfo@example.test", "ann@example.test"] }));
    const fbl = { mailFrom: "fbl@isp.example.test", rcptTo: [`fbl@${BOUNCE_DOMAIN}`] };
    const outcomes = await t.inbound.receive(fbl, fixture("arf-abuse.eml", { deliveryId: delivery.deliveryId }));
    expect(outcomes).toEqual([{ kind: "complaint", deliveryId: delivery.deliveryId, recipient: "ann@example.test", feedbackType: "abuse" }]);
    expect(t.suppressions.suppressed).toMatchObject([{ email: "ann@example.test", reason: "complaint" }]);
    expect(t.events.events).toEqual([]);

    // A report that names no recipient is the `to`'s, as before there were copies.
    const u = testInbound();
    await u.inbound.rememberSent(sentDelivery({ recipient: "boss@example.test", otherRecipients: ["ann@example.test"] }));
    const redacted = fixture("arf-abuse.eml", { deliveryId: delivery.deliveryId }).replace(/^Original-Rcpt-To: .*\n/m, "");
    await u.inbound.receive(fbl, redacted);
    expect(u.suppressions.suppressed).toMatchObject([{ email: "boss@example.test", reason: "complaint" }]);
    expect(u.events.events).toMatchObject([{ type: "complained", recipient: "boss@example.test" }]);
  });

  it("finds a complaint's delivery by the quoted return path when the header is gone", async () => {
    const t = await withDelivery();
    const raw = fixture("arf-abuse.eml", { deliveryId: delivery.deliveryId }).replace(/^X-Mailroom-Delivery-Id: .*\n/m, "");
    expect(await t.inbound.receive({ mailFrom: "", rcptTo: [`postmaster@${BOUNCE_DOMAIN}`] }, raw)).toMatchObject([
      { kind: "complaint", deliveryId: delivery.deliveryId },
    ]);
  });

  it("fails temporarily for a delivery it has not heard of yet, so the MTA retries", async () => {
    const t = testInbound();
    await expect(t.inbound.receive(bounceEnvelope, fixture("dsn-hard-5.1.1.eml", { deliveryId: delivery.deliveryId }))).rejects.toMatchObject({
      code: "unknown_delivery",
      httpStatus: 503,
    });
    expect(t.suppressions.suppressed).toEqual([]);
  });

  it("unsubscribes through the List-Unsubscribe mailto with the token in the address", async () => {
    const t = testInbound();
    const token = signRecipientToken(TEST_SECRET, recipientRef);
    const raw = "From: bob@example.test\r\nTo: x\r\nSubject: unsubscribe\r\n\r\n";
    const outcomes = await t.inbound.receive({ mailFrom: "bob@example.test", rcptTo: [`unsubscribe+${token}@acme.test`] }, raw);
    expect(outcomes).toEqual([{ kind: "unsubscribed", workspaceId: "ws_acme", recipient: "Bob@Example.test" }]);
    expect(t.suppressions.suppressed).toEqual([{ workspaceId: "ws_acme", email: "Bob@Example.test", reason: "unsubscribed", detail: "unsubscribed from cmp_1 by mail" }]);
    expect(t.suppressions.unsubscribedContacts).toEqual([{ workspaceId: "ws_acme", email: "Bob@Example.test" }]);
    expect(t.events.events).toMatchObject([
      // Tokens carry no Message-ID any more: broadcast and contact name the message.
      { type: "unsubscribed", source: "broadcast", broadcastId: "cmp_1", emailId: "", messageId: "", recipient: "Bob@Example.test", contactId: "ctc_1" },
    ]);
  });

  it("unsubscribes through the mailto with the token in the subject", async () => {
    const t = testInbound();
    const token = signRecipientToken(TEST_SECRET, { ...recipientRef, contentId: "trs_1" });
    const raw = `From: bob@example.test\r\nTo: unsubscribe@${BOUNCE_DOMAIN}\r\nSubject: unsubscribe ${token}\r\n\r\n`;
    await t.inbound.receive({ mailFrom: "bob@example.test", rcptTo: [`unsubscribe@${BOUNCE_DOMAIN}`] }, raw);
    expect(t.suppressions.suppressed).toMatchObject([{ email: "Bob@Example.test", reason: "unsubscribed" }]);
    expect(t.events.events).toMatchObject([{ type: "unsubscribed", source: "transactional", emailId: "trs_1" }]);
  });

  it("ignores a tampered token: refused at RCPT in the address, ignored in the subject", async () => {
    const t = testInbound();
    const token = signRecipientToken(TEST_SECRET, recipientRef);
    const tampered = token.slice(0, 5) + (token[5] === "A" ? "B" : "A") + token.slice(6);
    expect(t.inbound.mailboxOf(`unsubscribe+${tampered}@acme.test`)).toBeUndefined();
    const raw = `From: bob@example.test\r\nSubject: unsubscribe ${tampered}\r\n\r\n`;
    expect(await t.inbound.receive({ mailFrom: "bob@example.test", rcptTo: [`unsubscribe@${BOUNCE_DOMAIN}`] }, raw)).toMatchObject([
      { kind: "ignored", reason: "unsubscribe mail with an invalid token" },
    ]);
    expect(t.suppressions.suppressed).toEqual([]);
    expect(t.events.events).toEqual([]);
  });

  it("accepts only its own mailboxes: never a random address, a forged return path or another domain", () => {
    const { inbound } = testInbound();
    expect(inbound.mailboxOf(VERP)).toEqual({ kind: "return-path", deliveryId: delivery.deliveryId });
    expect(inbound.mailboxOf(`fbl@${BOUNCE_DOMAIN}`)).toEqual({ kind: "reports" });
    expect(inbound.mailboxOf(`unsubscribe@${BOUNCE_DOMAIN}`)).toEqual({ kind: "unsubscribe-by-subject" });
    expect(inbound.mailboxOf(`someone@${BOUNCE_DOMAIN}`)).toBeUndefined();
    expect(inbound.mailboxOf("fbl@elsewhere.test")).toBeUndefined();
    expect(inbound.mailboxOf("victim@gmail.test")).toBeUndefined();
    expect(inbound.mailboxOf(`bounces+aaaaaaaaaaaaaaaa@${BOUNCE_DOMAIN}`)).toBeUndefined();
    expect(inbound.mailboxOf(verpAddress("another-secret-0123456789", delivery.deliveryId, BOUNCE_DOMAIN)!)).toBeUndefined();
    // Fixed mailboxes live on every per-sender bounce subdomain (bounces.<domain>), never on the sender's own domain.
    const perDomain = testInbound({ domains: [] }).inbound;
    expect(perDomain.mailboxOf("unsubscribe@bounces.acme.test")).toEqual({ kind: "unsubscribe-by-subject" });
    expect(perDomain.mailboxOf("fbl@bounces.acme.test")).toEqual({ kind: "reports" });
    expect(perDomain.mailboxOf("unsubscribe@acme.test")).toBeUndefined();
    expect(perDomain.mailboxOf("postmaster@acme.test")).toBeUndefined();
    expect(perDomain.mailboxOf(verpAddress(TEST_SECRET, delivery.deliveryId, "bounces.acme.test")!)).toEqual({ kind: "return-path", deliveryId: delivery.deliveryId });
  });
});
