/**
 * Receiving email (DESIGN §10.4) with the real parts: the inbound unit as its own process, a
 * real nats-server with JetStream (records' bytes in its object store, events on its streams),
 * a real DNS server on loopback (dns2) for the MX checks, and mail delivered over SMTP by
 * nodemailer. ReceivingService is called over Connect as the gateway calls it.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";
import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { startUnits, type RunningSystem } from "../../deploy/processes.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { freePort } from "../harness/ports.js";
import { connectClient, connectNats, publishProto, type NatsConnection } from "@mailroom/kit";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { EVENTS_STREAM, WEBHOOK_EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import { DeliverySource, MailEventSchema, MailEventType, WebhookEventSchema, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { ReceivingService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { startMxServer, type MxZone } from "../../services/inbound/src/dns-testing.js";

const MX_HOST = "mx.mailroom.test";
const MAX_BYTES = 200_000;
const SENT_MESSAGE_ID = "01jdsent0000000000000000aa@acme.test";

let nats: NatsHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let dataDir: string;
let units: RunningSystem;
let smtpPort: number;
let receiving: Client<typeof ReceivingService>;
const zone: MxZone = new Map();
let dns: Awaited<ReturnType<typeof startMxServer>>;

function send(envelope: { from: string; to: string | string[] }, raw: string | Buffer) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true });
  return transport.sendMail({ envelope, raw }).finally(() => transport.close());
}
const failure = (p: Promise<unknown>) => p.then(() => undefined, (err) => err as { responseCode?: number; response?: string });
const codeOf = (p: Promise<unknown>) => p.then(() => undefined, (err) => ({ code: ConnectError.from(err).code, app: errorInfoOf(err)?.code }));

/** A message built by nodemailer (MIME, base64 attachment), as bytes: sent with `raw` so the stored copy can be compared. */
async function build(opts: Mail.Options): Promise<Buffer> {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" });
  const info = await transport.sendMail(opts);
  return info.message as Buffer;
}

async function lastWebhookEvent(type: string): Promise<{ eventId: string; workspaceId: string; data: Record<string, unknown> }> {
  const msg = await jsm.streams.getMessage(WEBHOOK_EVENTS_STREAM, { last_by_subj: `webhook.events.${type}` });
  if (!msg) throw new Error(`no ${type} event`);
  const event = fromBinary(WebhookEventSchema, msg.data);
  return { eventId: event.eventId, workspaceId: event.workspaceId, data: JSON.parse(new TextDecoder().decode(event.dataJson)) };
}

async function eventCount(stream: string, subject: string): Promise<number> {
  const info = await jsm.streams.info(stream, { subjects_filter: subject });
  return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
}

async function streamed(call: AsyncIterable<{ info?: { filename: string; contentType: string; size: bigint }; data: Uint8Array }>) {
  const chunks: Buffer[] = [];
  let info: { filename: string; contentType: string; size: bigint } | undefined;
  let count = 0;
  for await (const c of call) {
    if (count++ === 0) info = c.info;
    else expect(c.info).toBeUndefined();
    chunks.push(Buffer.from(c.data));
  }
  return { info, bytes: Buffer.concat(chunks), chunks: count };
}

async function logs(): Promise<string> {
  return `\n--- inbound log\n${(await readFile(path.join(dataDir, "logs", "inbound.log"), "utf8").catch(() => "")).split("\n").slice(-40).join("\n")}`;
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-receiving-"));
  [nats, dns] = await Promise.all([startNats(), startMxServer(zone)]);
  nc = await connectNats(nats.url, "receiving-test");
  await ensureMailStreams(nc);
  jsm = await jetstreamManager(nc);
  smtpPort = await freePort();
  const servicePort = await freePort();
  // The accounts unit answers which sending domains a workspace verified: only those (and their
  // subdomains) may be claimed for receiving. ws_beta verified acme.test too (two workspaces
  // may), ws_gamma did not.
  const bootstrap = path.join(dataDir, "bootstrap.json");
  await writeFile(bootstrap, JSON.stringify({
    workspaces: [
      { id: "ws_acme", name: "Acme", verifiedDomains: ["acme.test"] },
      { id: "ws_beta", name: "Beta", verifiedDomains: ["acme.test"] },
      { id: "ws_gamma", name: "Gamma", verifiedDomains: ["gamma.test"] },
    ],
  }));
  units = await startUnits({
    env: {
      MAILROOM_BOOTSTRAP: bootstrap,
      MAILROOM_NATS_URL: nats.url,
      MAILROOM_DATA_DIR: dataDir,
      MAILROOM_SECRET: "receiving-e2e-secret-0123456789",
      MAILROOM_BOUNCE_DOMAIN: "bounces.mailroom.test",
      MAILROOM_INBOUND_MX_HOST: MX_HOST,
      MAILROOM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
      MAILROOM_INBOUND_MAX_BYTES: String(MAX_BYTES),
      // Scored in the adapter's own test: here every message would wait on a Perl process.
      MAILROOM_INBOUND_SPAM_MAX_BYTES: "0",
      MAILROOM_LOG_LEVEL: "info",
    },
    ports: { inbound: smtpPort },
    servicePorts: { inbound: servicePort },
    units: ["inbound", "accounts", "audience"],
    output: { kind: "files", dir: path.join(dataDir, "logs") },
  });
  receiving = connectClient(ReceivingService, `http://127.0.0.1:${servicePort}`);
  // A transactional email ws_acme sent: the inbound unit remembers it from its SENT event.
  const sent = create(MailEventSchema, {
    eventId: "sent-trs_reply", type: MailEventType.SENT, workspaceId: "ws_acme", source: DeliverySource.TRANSACTIONAL,
    deliveryId: "trs_reply", emailId: "trs_reply", messageId: SENT_MESSAGE_ID, recipient: "ann@example.test", contactId: "ctc_ann",
    smtpCode: 250, attempt: 1, occurredAt: timestampNow(),
  });
  await publishProto(jetstream(nc), "mail.events.transactional.sent", MailEventSchema, sent, sent.eventId);
}, 90_000);

afterAll(async () => {
  await units?.stop();
  await nc?.close();
  await nats?.stop();
  await dns?.close();
  if (dataDir && !process.env.MAILROOM_KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
});

describe("receiving email over SMTP", () => {
  let domainId: string;

  it("verifies an inbound domain by its MX record (real DNS), and gives it to one workspace only", async () => {
    zone.set("acme.test", [{ exchange: "mx.other-provider.test", priority: 10 }]);
    const { domain } = await receiving.createInboundDomain({ workspaceId: "ws_acme", domain: "ACME.test" });
    expect(domain).toMatchObject({ domain: "acme.test", status: "pending", mxHost: MX_HOST, mxPriority: 10, failure: expect.stringContaining("MX names other hosts: mx.other-provider.test") });
    domainId = domain!.id;
    // Pending: even a catch-all rule takes nothing yet.
    await receiving.createInboundRule({ workspaceId: "ws_acme", domainId, match: "support", action: "webhook" });
    expect(await failure(send({ from: "ann@example.test", to: "support@acme.test" }, "Subject: early\r\n\r\nhi\r\n"))).toMatchObject({ responseCode: 550 });

    zone.set("acme.test", [{ exchange: `${MX_HOST}.`, priority: 10 }]);
    const verified = await receiving.verifyInboundDomain({ workspaceId: "ws_acme", id: domainId });
    expect(verified.domain).toMatchObject({ status: "verified", failure: "" });
    expect(verified.domain?.verifiedAt).toBeDefined();
    await receiving.createInboundRule({ workspaceId: "ws_acme", domainId, match: "reply+*", action: "webhook" });
    await receiving.createInboundRule({ workspaceId: "ws_acme", domainId, match: "archive", action: "store" });

    expect(await codeOf(receiving.createInboundDomain({ workspaceId: "ws_beta", domain: "acme.test" }))).toEqual({ code: Code.AlreadyExists, app: "inbound_domain_taken" });
    expect(await codeOf(receiving.createInboundDomain({ workspaceId: "ws_gamma", domain: "mail.acme.test" }))).toEqual({ code: Code.AlreadyExists, app: "domain_not_verified" });
    expect(await codeOf(receiving.createInboundRule({ workspaceId: "ws_acme", domainId, match: "a*b", action: "store" }))).toEqual({ code: Code.InvalidArgument, app: "invalid_inbound_rule" });
    expect(await codeOf(receiving.getInboundDomain({ workspaceId: "ws_beta", id: domainId }))).toEqual({ code: Code.NotFound, app: "inbound_domain_not_found" });
    expect((await receiving.listInboundDomains({ workspaceId: "ws_beta" })).domains).toEqual([]);
  });

  let receivedId = "";
  let raw: Buffer;
  const pdf = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));

  it("publishes EMAIL_RECEIVED with the attachment listed, and serves its bytes and the raw message byte for byte", async () => {
    raw = await build({
      from: "Ann Example <ann@example.test>", to: "Acme Support <support@acme.test>", cc: "carl@example.test", subject: "Invoice question",
      messageId: "<q1@example.test>", text: "Is this right?\n\n> quoted history\n", attachments: [{ filename: "invoice.pdf", contentType: "application/pdf", content: pdf }],
    });
    const info = await send({ from: "ann@example.test", to: "support@acme.test" }, raw).catch(async (err) => {
      throw new Error(`${err.message}${await logs()}`);
    });
    expect(info.accepted).toEqual(["support@acme.test"]);

    const event = await lastWebhookEvent("EMAIL_RECEIVED");
    expect(event.workspaceId).toBe("ws_acme");
    expect(event.data).toEqual({
      id: expect.stringMatching(/^rcv_/), from: "ann@example.test", to: ["support@acme.test"], cc: ["carl@example.test"], subject: "Invoice question",
      messageId: "q1@example.test", receivedAt: expect.any(String),
      attachments: [{ id: "att_1", filename: "invoice.pdf", contentType: "application/pdf", size: pdf.length }],
    });
    receivedId = event.data.id as string;

    const { email } = await receiving.getReceivedEmail({ workspaceId: "ws_acme", id: receivedId });
    expect(email).toMatchObject({ id: receivedId, domainId, envelopeTo: ["support@acme.test"], mailFrom: "ann@example.test", action: "webhook", size: BigInt(raw.length), strippedTextReply: "Is this right?" });
    expect(email?.spamScore).toBeUndefined();
    expect(email?.headers.find((h) => h.name === "Subject")?.value).toBe("Invoice question");

    const attachment = await streamed(receiving.getReceivedAttachment({ workspaceId: "ws_acme", emailId: receivedId, attachmentId: "att_1" }));
    expect(attachment.info).toMatchObject({ filename: "invoice.pdf", contentType: "application/pdf", size: BigInt(pdf.length) });
    expect(Buffer.compare(attachment.bytes, pdf)).toBe(0);
    const rawBack = await streamed(receiving.getReceivedRaw({ workspaceId: "ws_acme", emailId: receivedId }));
    expect(rawBack.info).toMatchObject({ filename: `${receivedId}.eml`, contentType: "message/rfc822" });
    expect(Buffer.compare(rawBack.bytes, raw)).toBe(0);

    // The sending MTA delivers it again: still one record, one event.
    await send({ from: "ann@example.test", to: "support@acme.test" }, raw);
    expect(await eventCount(WEBHOOK_EVENTS_STREAM, "webhook.events.EMAIL_RECEIVED")).toBe(1);
  });

  it("keeps every record and byte from another workspace", async () => {
    expect(await codeOf(receiving.getReceivedEmail({ workspaceId: "ws_beta", id: receivedId }))).toEqual({ code: Code.NotFound, app: "received_email_not_found" });
    expect(await codeOf(streamed(receiving.getReceivedAttachment({ workspaceId: "ws_beta", emailId: receivedId, attachmentId: "att_1" })))).toEqual({ code: Code.NotFound, app: "received_email_not_found" });
    expect(await codeOf(streamed(receiving.getReceivedRaw({ workspaceId: "ws_beta", emailId: receivedId })))).toEqual({ code: Code.NotFound, app: "received_email_not_found" });
    expect((await receiving.listReceivedEmails({ workspaceId: "ws_beta" })).emails).toEqual([]);
    expect(await codeOf(receiving.deleteInboundDomain({ workspaceId: "ws_beta", id: domainId }))).toEqual({ code: Code.NotFound, app: "inbound_domain_not_found" });
  });

  it("gives a plus-address's tag as mailboxHash, refuses unknown recipients (550) and messages over the limit (552)", async () => {
    await send({ from: "bob@example.test", to: "reply+Tk42x@acme.test" }, await build({ from: "bob@example.test", to: "reply+Tk42x@acme.test", subject: "re", text: "ok", messageId: "<p1@example.test>" }));
    expect((await lastWebhookEvent("EMAIL_RECEIVED")).data).toMatchObject({ mailboxHash: "Tk42x", from: "bob@example.test" });

    expect(await failure(send({ from: "bob@example.test", to: "nobody@acme.test" }, "Subject: x\r\n\r\ny\r\n"))).toMatchObject({ responseCode: 550 });
    const big = await build({ from: "bob@example.test", to: "archive@acme.test", subject: "big", text: "x", attachments: [{ filename: "big.bin", content: Buffer.alloc(MAX_BYTES, 1) }] });
    expect(await failure(send({ from: "bob@example.test", to: "archive@acme.test" }, big))).toMatchObject({ responseCode: 552 });
    const listed = await receiving.listReceivedEmails({ workspaceId: "ws_acme", to: "archive@acme.test" });
    expect(listed.emails).toEqual([]);
  });

  it("matches a reply to the email it answers and publishes REPLIED", async () => {
    const deadline = Date.now() + 15_000;
    let id = "";
    // The SENT event is consumed asynchronously: each try is a new message until one is matched.
    for (let attempt = 1; ; attempt++) {
      const reply = await build({
        from: "ann@example.test", to: "archive@acme.test", subject: "Re: your receipt", text: "Thanks!", messageId: `<answer-${attempt}@example.test>`,
        inReplyTo: `<${SENT_MESSAGE_ID}>`, references: [`<${SENT_MESSAGE_ID}>`],
      });
      await send({ from: "ann@example.test", to: "archive@acme.test" }, reply);
      const page = await receiving.listReceivedEmails({ workspaceId: "ws_acme", to: "archive@acme.test", limit: 1 });
      const email = page.emails[0];
      if (email?.inReplyTo?.emailId) {
        id = email.id;
        expect(email.inReplyTo).toMatchObject({ emailId: "trs_reply", contactId: "ctc_ann" });
        expect(email.inReplyToHeader).toBe(SENT_MESSAGE_ID);
        break;
      }
      if (Date.now() > deadline) throw new Error(`reply never matched${await logs()}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    const msg = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: "mail.events.transactional.replied" });
    const replied: MailEvent = fromBinary(MailEventSchema, msg!.data);
    expect(replied).toMatchObject({ type: MailEventType.REPLIED, workspaceId: "ws_acme", deliveryId: "trs_reply", emailId: "trs_reply", contactId: "ctc_ann", detail: id });
    expect(await eventCount(EVENTS_STREAM, "mail.events.transactional.replied")).toBe(1);
  });

  it("lists newest first, filtered by recipient, with a cursor", async () => {
    const first = await receiving.listReceivedEmails({ workspaceId: "ws_acme", limit: 1 });
    expect(first.emails).toHaveLength(1);
    expect(first.nextCursor).not.toBe("");
    const second = await receiving.listReceivedEmails({ workspaceId: "ws_acme", limit: 100, cursor: first.nextCursor });
    const all = [...first.emails, ...second.emails];
    expect(second.nextCursor).toBe("");
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    expect(all.map((e) => e.id)).toContain(receivedId);
    expect(all[all.length - 1].id).toBe(receivedId); // the oldest
    expect(all.every((e, i) => i === 0 || e.receivedAt!.seconds <= all[i - 1].receivedAt!.seconds)).toBe(true);
    expect((await receiving.listReceivedEmails({ workspaceId: "ws_acme", from: "bob@example.test" })).emails.map((e) => e.mailboxHash)).toEqual(["Tk42x"]);
    expect(await codeOf(receiving.listReceivedEmails({ workspaceId: "ws_acme", cursor: "bogus" }))).toEqual({ code: Code.InvalidArgument, app: "invalid_cursor" });
  });
});
