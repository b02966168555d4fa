/**
 * Delivery routes with a relay provider each, and that provider's event webhooks, end to end
 * (issue 30, DESIGN §9.7): the real units over a real nats-server, MAILROOM_DELIVERY_ROUTES
 * naming one SMTP sink per provider (SES, Postmark, SendGrid, Mailgun), each reserved for one
 * workspace, plus a shared route without provider. Each email goes out through the public API;
 * the sink shows the provider's correlation header carrying the delivery id; then the
 * provider's webhook, built only from what that provider would know (the correlation value it
 * read from that header, its own message id — never Mailroom's Message-ID), is POSTed to the
 * gateway: the email's status, the suppression (a second send to the address fails as
 * suppressed), the contact's status after a complaint, the EMAIL_BOUNCED / EMAIL_COMPLAINED
 * webhook, no second EMAIL_DELIVERED after a provider's delivery report, and the route on the
 * console's email and Delivery pages (credentials of a route URL shown nowhere).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Client } from "@connectrpc/connect";
import PostalMime from "postal-mime";
import { connectClient } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { startSmtpSink } from "../harness/smtp-sink.js";
import { startAuthSink } from "./provider-routes-support.js";
import { deliveryIdOfSesTag } from "@mailroom/pipeline/relay-providers.js";
import { startReceiver } from "../webhooks/receiver.js";
import {
  MAILGUN_TEST_SIGNING_KEY, SENDGRID_TEST_PUBLIC_KEY, SES_TEST_TOPIC, SNS_TEST_CERT_FILE, basicAuth, mailgunSigned, sendgridHeaders, snsMessage,
} from "../../services/inbound/src/testing.js";

const PROVIDERS = ["ses", "postmark", "sendgrid", "mailgun"] as const;
type Provider = (typeof PROVIDERS)[number];
/** The header each provider reads our delivery id from (services/pipeline/src/relay-providers.ts). */
const HEADER: Record<Provider, string> = {
  ses: "X-SES-MESSAGE-TAGS", postmark: "X-PM-Metadata-mailroom_delivery_id", sendgrid: "X-SMTPAPI", mailgun: "X-Mailgun-Variables",
};
const wsOf = (p: Provider | "plain") => `ws_${p}`;
const keyOf = (p: Provider | "plain") => `mr_test_provider_routes_${p}`;
const POSTMARK_USER = "mailroom";
const BROADCAST_RCPT = "bea-broadcast@example.test";
const OWNER = "owner@acme.test";
const POSTMARK_PASSWORD = "pm-hook-pass-42";
/** In the shared route's URL: must never show in a log, the console or a status. */
const RELAY_PASSWORD = "hunter2-relay-secret";
/** Postmark's SMTP credentials are its server token as user and password (docs/delivery.md's example `smtp://TOKEN:TOKEN@…`). */
const POSTMARK_TOKEN = "0f7c2b1e-pm-server-token-5d9a";

/** What the suite reads of a sink. */
interface Sink { port: number; url: string; messages: { raw: string }[]; waitFor(count: number, timeoutMs?: number): Promise<{ raw: string }[]>; stop(): Promise<void> }

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowSeconds = () => Math.floor(Date.now() / 1000);

describe("relay provider routes and their event webhooks, end to end", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let accounts: Client<typeof AccountsService>;
  let contacts: Client<typeof ContactService>;
  const sinks = {} as Record<Provider | "plain", Sink>;

  beforeAll(async () => {
    receiver = await startReceiver();
    for (const p of ["ses", "sendgrid", "mailgun"] as const) sinks[p] = await startSmtpSink();
    // Relays that want AUTH: the credentials are in the route URLs, and must stay hidden.
    sinks.postmark = await startAuthSink(POSTMARK_TOKEN, POSTMARK_TOKEN);
    sinks.plain = await startAuthSink("relayuser", RELAY_PASSWORD);
    const routes = [
      ...PROVIDERS.map((p) => ({ name: p, url: sinks[p].url, provider: p, workspaces: [wsOf(p)] })),
      // The shared route (every other workspace).
      { name: "plain", url: sinks.plain.url },
    ];
    const workspace = (p: Provider | "plain") => ({
      id: wsOf(p), name: p, timezone: "UTC",
      apiKeys: [{ key: keyOf(p), scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [{ email: OWNER, role: "OWNER" }],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 1000, sendingAccountNew: false,
      // One subscribed contact for the broadcast through SES.
      ...(p === "ses" ? { contacts: [{ email: BROADCAST_RCPT, firstName: "Bea", subscribed: true }] } : {}),
    });
    sys = await startSystem({
      smtp: false,
      bootstrap: { workspaces: [...PROVIDERS, "plain" as const].map(workspace) },
      units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "inbound", "webhooks", "gateway"],
      env: {
        MAILROOM_DELIVERY_ROUTES: JSON.stringify(routes),
        MAILROOM_WEBHOOKS_POLL_MS: "100",
        MAILROOM_WEBHOOKS_ENDPOINT_CACHE_MS: "0",
        MAILROOM_SES_TOPIC_ARNS: SES_TEST_TOPIC,
        MAILROOM_TEST_SNS_SIGNING_CERT_FILE: SNS_TEST_CERT_FILE,
        MAILROOM_POSTMARK_WEBHOOK_AUTH: `${POSTMARK_USER}:${POSTMARK_PASSWORD}`,
        MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: SENDGRID_TEST_PUBLIC_KEY,
        MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: MAILGUN_TEST_SIGNING_KEY,
      },
    });
    accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    for (const p of PROVIDERS) {
      const hook = await sys.api("POST", "/v1/webhooks", {
        key: keyOf(p), body: { url: receiver.url, events: ["EMAIL_DELIVERED", "EMAIL_BOUNCED", "EMAIL_COMPLAINED"] },
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
    await Promise.all(Object.values(sinks).map((s) => s?.stop()));
  });

  const api = (p: Provider | "plain", method: string, path: string, body?: unknown) => sys.api(method, path, { key: keyOf(p), body });
  const emailOf = async (p: Provider, id: string) => (await api(p, "GET", `/v1/emails/${id}`)).body.email;
  const hooksFor = (emailId: string, type: string) => receiver.received.filter((r) => r.event.type === type && r.event.data.emailId === emailId);

  /** Sends one email through workspace p's route; what arrived at its sink, parsed. */
  async function send(p: Provider | "plain", to: string) {
    const before = sinks[p].messages.length;
    const sent = await api(p, "POST", "/v1/emails", { from: "Acme <team@acme.test>", to, subject: `Hello via ${p}`, html: "<p>Hi</p>" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const messages = await sinks[p].waitFor(before + 1, 30_000).catch(async (err) => {
      throw new Error(`${err.message}\n--- delivery log ---\n${await sys.log("delivery")}`);
    });
    const parsed = await PostalMime.parse(messages[before].raw);
    const header = (name: string) => parsed.headers.find((h) => h.key === name.toLowerCase())?.value.trim() ?? "";
    return { id: sent.body.email.id as string, header, raw: messages[before].raw };
  }

  /** The delivery id the provider reads back from the correlation header it was given (not X-Mailroom-Delivery-Id). */
  function correlationValue(p: Provider, header: (name: string) => string): string {
    switch (p) {
      case "ses":
        return /(?:^|,)\s*mailroom_delivery_id=([^,\s]+)/.exec(header("X-SES-MESSAGE-TAGS"))?.[1] ?? "";
      case "postmark":
        return header("X-PM-Metadata-mailroom_delivery_id");
      case "sendgrid":
        return JSON.parse(header("X-SMTPAPI") || "{}").unique_args?.mailroom_delivery_id ?? "";
      case "mailgun":
        return JSON.parse(header("X-Mailgun-Variables") || "{}").mailroom_delivery_id ?? "";
    }
  }

  /** POSTs a provider webhook until inbound took it (503 / ignored while delivery's SENT is not consumed yet). */
  async function post(p: Provider, body: () => string, headers: () => Record<string, string>) {
    return until(
      async () => {
        const res = await fetch(`${sys.gatewayUrl}/webhooks/${p}`, { method: "POST", headers: headers(), body: body() });
        const text = await res.text();
        let parsed: any = text;
        try { parsed = JSON.parse(text); } catch { /* not JSON */ }
        return { status: res.status, body: parsed };
      },
      (r) => (r.status !== 200 && r.status !== 503) || r.body.accepted > 0,
      20_000,
    );
  }
  const json = { "content-type": "application/json" };

  async function suppressionOf(p: Provider, email: string) {
    return (await contacts.checkSuppression({ workspaceId: wsOf(p), emails: [email] })).suppressed[0];
  }

  /** A second send to a suppressed address: accepted by the API, then FAILED as suppressed, nothing reaches the sink. */
  async function expectSecondSendSuppressed(p: Provider, to: string) {
    const before = sinks[p].messages.length;
    const again = await api(p, "POST", "/v1/emails", { from: "team@acme.test", to, subject: "Again", html: "<p>Again</p>" });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const email = await until(() => emailOf(p, again.body.email.id), (e) => e.status === "FAILED", 20_000);
    expect(JSON.stringify(email).toLowerCase()).toContain("suppress");
    expect(sinks[p].messages.length).toBe(before);
  }

  /** Signs in to the console with p's key over HTTP (form + CSRF cookie), as a browser does; returns a page reader. */
  async function consoleAs(p: Provider | "plain", apiKey = keyOf(p)) {
    const jar = new Map<string, string>();
    const keep = (res: Response) => {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(";");
        const i = pair.indexOf("=");
        jar.set(pair.slice(0, i), pair.slice(i + 1));
      }
    };
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const page = await fetch(`${sys.gatewayUrl}/console/sign-in`);
    keep(page);
    const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const res = await fetch(`${sys.gatewayUrl}/console/sign-in`, {
      method: "POST", redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie(), origin: sys.gatewayUrl },
      body: new URLSearchParams({ _csrf: csrf, apiKey, next: "/console" }).toString(),
    });
    expect(res.status, await res.clone().text()).toBe(303);
    keep(res);
    return async (path: string) => {
      const r = await fetch(`${sys.gatewayUrl}/console${path}`, { headers: { cookie: cookie() }, redirect: "manual" });
      return { status: r.status, html: await r.text() };
    };
  }
  /**
   * The Delivery page is the operator's (owners and admins): an ADMIN key the workspace's owner
   * answers for, as `mailroom key create --role ADMIN --owner` makes one.
   */
  async function operatorConsole() {
    const { plainKey } = await accounts.createApiKey({ workspaceId: wsOf("plain"), name: "operator", role: "ADMIN", ownerMemberId: OWNER });
    return consoleAs("plain", plainKey);
  }
  /** The text of a console page without tags (entities as the page writes them). */
  const textOf = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

  it("each provider's route carries its correlation header with the delivery id; the shared route carries none", async () => {
    for (const p of PROVIDERS) {
      const mail = await send(p, `header-check-${p}@example.test`);
      const deliveryId = mail.header("X-Mailroom-Delivery-Id");
      expect(deliveryId, p).not.toBe("");
      expect(correlationValue(p, mail.header), `${p}: correlation header\n${mail.raw.slice(0, 3000)}`).toBe(deliveryId);
      // Only its own provider's header.
      for (const other of PROVIDERS.filter((o) => o !== p)) expect(mail.header(HEADER[other]), `${p} ${HEADER[other]}`).toBe("");
    }
    const plain = await send("plain", "header-check-plain@example.test");
    for (const name of Object.values(HEADER)) expect(plain.header(name), name).toBe("");
    // Nothing crossed workspaces: each sink got only its own workspace's mail.
    for (const p of [...PROVIDERS, "plain"] as const) {
      expect(sinks[p].messages.every((m) => m.raw.includes(`Hello via ${p}`)), p).toBe(true);
    }
  }, 120_000);

  it("SES: a Permanent bounce (event publishing, matched by the message tag) bounces the email, suppresses the address, fires EMAIL_BOUNCED", async () => {
    const to = "ses-hard@example.test";
    const mail = await send("ses", to);
    const tag = correlationValue("ses", mail.header);
    await until(async () => hooksFor(mail.id, "EMAIL_DELIVERED"), (l) => l.length === 1);
    const now = new Date().toISOString();
    // SES replaces the Message-ID with its own; only the tag names our delivery.
    const notification = JSON.stringify({
      eventType: "Bounce",
      bounce: {
        bounceType: "Permanent", bounceSubType: "General",
        bouncedRecipients: [{ emailAddress: to, action: "failed", status: "5.1.1", diagnosticCode: "smtp; 550 5.1.1 user unknown" }],
        timestamp: now, feedbackId: "0100019a-bounce-feedback-000000", reportingMTA: "dsn; a8-1.smtp-out.amazonses.com",
      },
      mail: {
        timestamp: now, source: "team@acme.test", sendingAccountId: "123456789012",
        messageId: "0100019abcdef-1234-ses-own-id-000000", destination: [to], headersTruncated: false,
        headers: [{ name: "From", value: "Acme <team@acme.test>" }, { name: "To", value: to }, { name: "Message-ID", value: "<0100019abcdef-1234-ses-own-id-000000@email.amazonses.com>" }],
        commonHeaders: { from: ["Acme <team@acme.test>"], to: [to], messageId: "0100019abcdef-1234-ses-own-id-000000", subject: "Hello via ses" },
        tags: { "ses:configuration-set": ["mailroom"], mailroom_delivery_id: [tag] },
      },
    });
    const signed = snsMessage(notification);
    const res = await post("ses", () => signed, () => ({ "content-type": "text/plain; charset=UTF-8" }));
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });

    const email = await until(() => emailOf("ses", mail.id), (e) => e.lastEvent?.type === "BOUNCED");
    expect(email).toMatchObject({ status: "FAILED", events: { bounceType: "hard" } });
    expect(await suppressionOf("ses", to)).toMatchObject({ reason: SuppressionReason.HARD_BOUNCE });
    const bounced = await until(async () => hooksFor(mail.id, "EMAIL_BOUNCED"), (l) => l.length >= 1);
    expect(bounced[0].event).toMatchObject({ workspaceId: wsOf("ses"), data: { emailId: mail.id, to } });
    await expectSecondSendSuppressed("ses", to);

    // The console's email page names the route, and its timeline the bounce's route.
    const page = await (await consoleAs("ses"))(`/emails/${mail.id}`);
    expect(page.status).toBe(200);
    expect(textOf(page.html)).toMatch(/Delivery route ses\b/);
    expect(textOf(page.html)).toContain("via route ses");
  }, 120_000);

  it("Postmark: a Delivery report only confirms (no second EMAIL_DELIVERED); a SpamComplaint suppresses, unsubscribes the contact and fires EMAIL_COMPLAINED", async () => {
    const to = "pm-complainer@example.test";
    const contact = await api("postmark", "POST", "/v1/contacts", { properties: { email: to, firstName: "Pat" } });
    expect(contact.status, JSON.stringify(contact.body)).toBeLessThan(300);
    const contactId = contact.body.contact.id as string;
    const mail = await send("postmark", to);
    const metadata = correlationValue("postmark", mail.header);
    await until(async () => hooksFor(mail.id, "EMAIL_DELIVERED"), (l) => l.length === 1);
    const auth = () => ({ ...json, authorization: basicAuth(POSTMARK_USER, POSTMARK_PASSWORD) });

    // Wrong credentials first: refused, nothing recorded.
    const wrong = await fetch(`${sys.gatewayUrl}/webhooks/postmark`, { method: "POST", headers: { ...json, authorization: basicAuth(POSTMARK_USER, "nope") }, body: "{}" });
    expect(wrong.status).toBe(401);

    const delivery = JSON.stringify({
      RecordType: "Delivery", ServerID: 23, MessageStream: "outbound", MessageID: "883953f4-6105-42a2-a16a-77a8eac79483",
      Recipient: to, Tag: "", DeliveredAt: new Date().toISOString(), Details: "smtp;250 2.0.0 OK", Metadata: { mailroom_delivery_id: metadata },
    });
    const confirmed = await post("postmark", () => delivery, auth);
    expect(confirmed, `${JSON.stringify(confirmed)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });
    const viewer = await consoleAs("postmark");
    await until(async () => textOf((await viewer(`/emails/${mail.id}`)).html), (t) => t.includes("Delivery confirmed by the relay provider via route postmark"));
    expect((await emailOf("postmark", mail.id)).status).toBe("DELIVERED");

    const complaint = JSON.stringify({
      RecordType: "SpamComplaint", MessageStream: "outbound", ID: 42, Type: "SpamComplaint", TypeCode: 512, Name: "Spam complaint",
      MessageID: "883953f4-6105-42a2-a16a-77a8eac79483", Metadata: { mailroom_delivery_id: metadata }, ServerID: 23,
      Description: "", Details: "Test spam complaint details", Email: to, From: "team@acme.test",
      BouncedAt: new Date().toISOString(), DumpAvailable: true, Inactive: true, CanActivate: false, Subject: "Hello via postmark",
    });
    const res = await post("postmark", () => complaint, auth);
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });
    const complained = await until(async () => hooksFor(mail.id, "EMAIL_COMPLAINED"), (l) => l.length >= 1);
    expect(complained[0].event).toMatchObject({ workspaceId: wsOf("postmark"), data: { emailId: mail.id, to } });
    expect(await suppressionOf("postmark", to)).toMatchObject({ reason: SuppressionReason.COMPLAINT });
    const after = await until(async () => (await api("postmark", "GET", `/v1/contacts/${contactId}`)).body, (b) => JSON.stringify(b).includes("UNSUBSCRIBED"));
    expect(JSON.stringify(after)).toContain("UNSUBSCRIBED");
    await expectSecondSendSuppressed("postmark", to);

    // The delivery report made no second EMAIL_DELIVERED (given time to arrive if it were sent).
    await sleep(5_000);
    expect(hooksFor(mail.id, "EMAIL_DELIVERED")).toHaveLength(1);
  }, 120_000);

  it("SendGrid: a signed batch with a bounce (unique arg) bounces and suppresses; a 'blocked' bounce is soft (not suppressed); a delivered event confirms only", async () => {
    const hard = "sg-hard@example.test";
    const soft = "sg-soft@example.test";
    const a = await send("sendgrid", hard);
    const b = await send("sendgrid", soft);
    const idA = correlationValue("sendgrid", a.header);
    const idB = correlationValue("sendgrid", b.header);
    await until(async () => [...hooksFor(a.id, "EMAIL_DELIVERED"), ...hooksFor(b.id, "EMAIL_DELIVERED")], (l) => l.length === 2);
    const ts = nowSeconds();
    // SendGrid's smtp-id is its own when the relay rewrote it; the unique arg is what names ours.
    const event = (email: string, id: string, fields: Record<string, unknown>) => ({
      email, timestamp: ts, "smtp-id": `<sg-${Math.random().toString(36).slice(2)}@ismtpd0001p1.sendgrid.net>`,
      sg_event_id: Math.random().toString(36).slice(2), sg_message_id: "14c583da911.2c1.6e5d9.filter0205p1mdw1", mailroom_delivery_id: id, ...fields,
    });
    const batch = JSON.stringify([
      event(hard, idA, { event: "processed" }),
      event(hard, idA, { event: "bounce", type: "bounce", reason: "550 5.1.1 unknown recipient", status: "5.1.1" }),
      event(soft, idB, { event: "delivered", response: "250 OK" }),
      event(soft, idB, { event: "bounce", type: "blocked", reason: "451 4.7.1 try later", status: "4.7.1" }),
    ]);
    // A forged signature first (signed, then one byte changed).
    const forgedHeaders = sendgridHeaders(batch);
    const forged = await fetch(`${sys.gatewayUrl}/webhooks/sendgrid`, { method: "POST", headers: { ...json, ...forgedHeaders }, body: batch.replace("5.1.1", "5.1.2") });
    expect(forged.status).toBe(401);
    const res = await post("sendgrid", () => batch, () => ({ ...json, ...sendgridHeaders(batch) }));
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 3, ignored: 1 } });

    const emailA = await until(() => emailOf("sendgrid", a.id), (e) => e.lastEvent?.type === "BOUNCED");
    expect(emailA).toMatchObject({ status: "FAILED", events: { bounceType: "hard" } });
    expect(await suppressionOf("sendgrid", hard)).toMatchObject({ reason: SuppressionReason.HARD_BOUNCE });
    await until(async () => hooksFor(a.id, "EMAIL_BOUNCED"), (l) => l.length >= 1);
    await expectSecondSendSuppressed("sendgrid", hard);

    // The soft bounce: recorded, the address not suppressed.
    const emailB = await until(() => emailOf("sendgrid", b.id), (e) => e.events?.bounceType === "soft" || e.lastEvent?.type === "BOUNCED", 20_000);
    expect(emailB.events?.bounceType, JSON.stringify(emailB)).toBe("soft");
    expect(await suppressionOf("sendgrid", soft)).toBeUndefined();
    await sleep(5_000);
    expect(hooksFor(b.id, "EMAIL_DELIVERED")).toHaveLength(1);
  }, 120_000);

  it("Mailgun: a signed 'complained' event matched by its user variable suppresses, unsubscribes the contact and fires EMAIL_COMPLAINED", async () => {
    const to = "mg-complainer@example.test";
    const contact = await api("mailgun", "POST", "/v1/contacts", { properties: { email: to, firstName: "Mo" } });
    expect(contact.status, JSON.stringify(contact.body)).toBeLessThan(300);
    const contactId = contact.body.contact.id as string;
    const mail = await send("mailgun", to);
    const variable = correlationValue("mailgun", mail.header);
    await until(async () => hooksFor(mail.id, "EMAIL_DELIVERED"), (l) => l.length === 1);
    const payload = (event: string) => JSON.stringify({
      signature: { timestamp: "%%TIMESTAMP%%", token: "%%TOKEN%%", signature: "%%SIGNATURE%%" },
      "event-data": {
        id: Math.random().toString(36).slice(2), timestamp: Date.now() / 1000, "log-level": event === "complained" ? "warn" : "info", event,
        ...(event === "delivered" ? { "delivery-status": { code: 250, message: "OK", description: "" } } : {}),
        // Mailgun's own Message-ID (it rewrites ours); the variable names the delivery.
        message: { headers: { to, "message-id": "20261127041500.1.ABCDEF@mg.acme.test", from: "team@acme.test", subject: "Hello via mailgun" }, attachments: [], size: 321 },
        recipient: to, campaigns: [], tags: [], "user-variables": { mailroom_delivery_id: variable },
      },
    });
    // Signed with another key: refused.
    const forged = await fetch(`${sys.gatewayUrl}/webhooks/mailgun`, { method: "POST", headers: json, body: mailgunSigned(payload("complained"), "key-not-the-right-one") });
    expect(forged.status).toBe(401);

    const delivered = await post("mailgun", () => mailgunSigned(payload("delivered")), () => json);
    expect(delivered).toMatchObject({ status: 200, body: { accepted: 1 } });
    const res = await post("mailgun", () => mailgunSigned(payload("complained")), () => json);
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });
    const complained = await until(async () => hooksFor(mail.id, "EMAIL_COMPLAINED"), (l) => l.length >= 1);
    expect(complained[0].event).toMatchObject({ workspaceId: wsOf("mailgun"), data: { emailId: mail.id } });
    expect(await suppressionOf("mailgun", to)).toMatchObject({ reason: SuppressionReason.COMPLAINT });
    await until(async () => (await api("mailgun", "GET", `/v1/contacts/${contactId}`)).body, (b) => JSON.stringify(b).includes("UNSUBSCRIBED"));
    await expectSecondSendSuppressed("mailgun", to);
    await sleep(5_000);
    expect(hooksFor(mail.id, "EMAIL_DELIVERED")).toHaveLength(1);
    const page = await (await consoleAs("mailgun"))(`/emails/${mail.id}`);
    expect(textOf(page.html)).toMatch(/Delivery route mailgun\b/);
  }, 120_000);

  it("the console's Delivery page lists every route with its provider; no route credentials in the page or any unit's log", async () => {
    const page = await (await operatorConsole())("/delivery");
    expect(page.status, page.html.slice(0, 500)).toBe(200);
    const text = textOf(page.html);
    for (const name of [...PROVIDERS, "plain"]) expect(text).toContain(name);
    for (const provider of PROVIDERS) expect(page.html).toContain(String(sinks[provider].port));
    expect(page.html).not.toContain(RELAY_PASSWORD);
    // A workspace sees others' reserved routes without their ids.
    expect(page.html).not.toContain(wsOf("ses"));
    for (const unit of ["delivery", "gateway", "email", "inbound", "webhooks", "accounts", "audience", "renderer"] as const) {
      expect(await sys.log(unit, 100_000), unit).not.toContain(RELAY_PASSWORD);
    }
  }, 60_000);

  // A Postmark route's URL is smtp://TOKEN:TOKEN@smtp.postmarkapp.com (docs/delivery.md): the token is the
  // user name too, so redactUrl hides both.
  it("a Postmark route's server token (its URL's user name) shows nowhere", async () => {
    const page = await (await operatorConsole())("/delivery");
    expect(page.html).not.toContain(POSTMARK_TOKEN);
    expect(await sys.log("delivery", 100_000)).not.toContain(POSTMARK_TOKEN);
  }, 60_000);

  /** Sends a broadcast from ws_ses to its one contact through the ses route; its id and the message at the sink. */
  let broadcastMail: { id: string; header: (name: string) => string } | undefined;
  async function broadcastThroughSes() {
    if (broadcastMail) return broadcastMail;
    const before = sinks.ses.messages.length;
    const created = await api("ses", "POST", "/v1/broadcasts", {
      name: "News", subject: "News via ses", fromEmail: "news@acme.test", fromName: "Acme", html: "<p>Hi {{firstName}}</p>", audience: { all: true },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const scheduled = await api("ses", "POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const messages = await sinks.ses.waitFor(before + 1, 60_000);
    const parsed = await PostalMime.parse(messages[before].raw);
    const header = (name: string) => parsed.headers.find((h) => h.key === name.toLowerCase())?.value.trim() ?? "";
    broadcastMail = { id, header };
    return broadcastMail;
  }

  it("SES, a broadcast recipient: a Complaint matched by the message tag suppresses the address and unsubscribes the contact", async () => {
    const { id, header } = await broadcastThroughSes();
    const tag = correlationValue("ses", header);
    // The tag is the delivery id encoded for SES ('.' → -2E); inbound decodes it.
    expect(deliveryIdOfSesTag(tag)).toBe(header("X-Mailroom-Delivery-Id"));
    const now = new Date().toISOString();
    const notification = JSON.stringify({
      eventType: "Complaint",
      complaint: { complainedRecipients: [{ emailAddress: BROADCAST_RCPT }], timestamp: now, feedbackId: "0100019a-complaint-000000", complaintFeedbackType: "abuse", userAgent: "Yahoo!-Mail-Feedback/2.0" },
      mail: {
        timestamp: now, source: "news@acme.test", messageId: "0100019abcdef-5678-ses-own-id-000000", destination: [BROADCAST_RCPT],
        headersTruncated: false, headers: [], commonHeaders: { from: ["Acme <news@acme.test>"], to: [BROADCAST_RCPT], subject: "News via ses" },
        tags: { mailroom_delivery_id: [tag] },
      },
    });
    const signed = snsMessage(notification);
    const res = await post("ses", () => signed, () => ({ "content-type": "text/plain; charset=UTF-8" }));
    expect(res, `${JSON.stringify(res)}\n--- inbound log ---\n${await sys.log("inbound")}`).toMatchObject({ status: 200, body: { accepted: 1 } });
    expect(await until(() => suppressionOf("ses", BROADCAST_RCPT), (x) => x !== undefined)).toMatchObject({ reason: SuppressionReason.COMPLAINT });
    const contact = await until(async () => (await api("ses", "GET", `/v1/contacts/search?email=${encodeURIComponent(BROADCAST_RCPT)}`)).body, (b) => JSON.stringify(b).includes("UNSUBSCRIBED"));
    expect(JSON.stringify(contact)).toContain("UNSUBSCRIBED");
    // The broadcast itself: delivered to its one recipient (its progress has no complaint count).
    const broadcast = (await api("ses", "GET", `/v1/broadcasts/${id}`)).body.broadcast;
    expect(broadcast.progress).toMatchObject({ delivered: 1 });
  }, 120_000);

  // SES documents message tag values as ASCII letters, digits, '_' and '-' only
  // (https://docs.aws.amazon.com/ses/latest/APIReference/API_MessageTag.html); a broadcast's
  // delivery id is <broadcastId>.<contactId>, so delivery encodes it (sesTagValue).
  it("the SES tag of a broadcast recipient's message is a valid SES tag value", async () => {
    const { header } = await broadcastThroughSes();
    expect(correlationValue("ses", header)).toMatch(/^[A-Za-z0-9_-]{1,256}$/);
  }, 120_000);

  // Mailgun's `failed` with severity `temporary` means Mailgun will retry the message itself (its
  // docs; django-anymail maps it to DEFERRED): inbound publishes DEFERRED, which leaves the status.
  it("Mailgun: a temporary failure, then delivered after Mailgun's retry, leaves the email DELIVERED", async () => {
    const to = "mg-retried@example.test";
    const mail = await send("mailgun", to);
    const variable = correlationValue("mailgun", mail.header);
    await until(async () => hooksFor(mail.id, "EMAIL_DELIVERED"), (l) => l.length === 1);
    const event = (fields: Record<string, unknown>) => JSON.stringify({
      signature: { timestamp: "%%TIMESTAMP%%", token: "%%TOKEN%%", signature: "%%SIGNATURE%%" },
      "event-data": {
        id: Math.random().toString(36).slice(2), timestamp: Date.now() / 1000, recipient: to, "user-variables": { mailroom_delivery_id: variable },
        message: { headers: { to, "message-id": "20261127041501.2.ABCDEF@mg.acme.test", from: "team@acme.test" } }, ...fields,
      },
    });
    const temporary = event({ event: "failed", severity: "temporary", reason: "generic", "log-level": "warn", "delivery-status": { code: 452, message: "4.2.2 mailbox full, try later", "attempt-no": 1 } });
    expect(await post("mailgun", () => mailgunSigned(temporary), () => json)).toMatchObject({ status: 200, body: { accepted: 1 } });
    // A deferral (its last event DEFERRED, as delivery's own 4xx makes it), the status untouched.
    const deferred = await until(() => emailOf("mailgun", mail.id), (e) => e.lastEvent?.type === "DEFERRED");
    expect(deferred).toMatchObject({ status: "DELIVERED" });
    const delivered = event({ event: "delivered", "log-level": "info", "delivery-status": { code: 250, message: "OK", "attempt-no": 2 } });
    expect(await post("mailgun", () => mailgunSigned(delivered), () => json)).toMatchObject({ status: 200, body: { accepted: 1 } });
    await sleep(3_000);
    expect(await emailOf("mailgun", mail.id)).toMatchObject({ status: "DELIVERED" });
  }, 120_000);
});
