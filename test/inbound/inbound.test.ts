/**
 * The inbound unit as a real process with the real accounts and audience processes and a
 * real nats-server: bounces, complaints and mailto unsubscribes sent to it over SMTP with
 * nodemailer end up as suppressions in the audience unit and events on MAIL_EVENTS.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer from "nodemailer";
import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Client } from "@connectrpc/connect";
import { startUnits, type RunningSystem } from "../../deploy/processes.js";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { freePort } from "../harness/ports.js";
import { connectClient, connectNats, publishProto, type NatsConnection } from "@mailroom/kit";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { EVENTS_STREAM } from "@mailroom/pipeline/subjects.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { DeliverySource, MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { verpAddress } from "@mailroom/content/verp.js";

const SECRET = "inbound-e2e-secret-0123456789";
const BOUNCE_DOMAIN = "bounces.mailroom.test";
const FIXTURES = path.join(import.meta.dirname, "../../services/inbound/src/fixtures");
const BOUNCED_ID = "trs_01jd5m3v8k2x9q7w4e6r1t0y3u";
const COMPLAINED_ID = "trs_01jd5m3v8k2x9q7w4e6r1t0y3v";

const BOOTSTRAP = {
  workspaces: [
    {
      id: "ws_acme", name: "Acme", apiKeys: [{ key: "mr_test_acme_1", scopes: ["api_user"] }], verifiedDomains: ["acme.test"],
      contacts: [{ email: "bob@example.test", subscribed: true }, { email: "dave@example.test", subscribed: true }],
    },
  ],
};

let nats: NatsHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let dataDir: string;
let units: RunningSystem;
let inboundPort: number;
let contacts: Client<typeof ContactService>;

async function fixture(name: string, deliveryId: string, rcpt = `fbl@${BOUNCE_DOMAIN}`): Promise<string> {
  return (await readFile(path.join(FIXTURES, name), "utf8"))
    .replaceAll("%%VERP%%", verpAddress(SECRET, deliveryId, BOUNCE_DOMAIN)!)
    .replaceAll("%%DELIVERY_ID%%", deliveryId)
    .replaceAll("%%RCPT%%", rcpt);
}

/** One SMTP transaction to the inbound unit; `from: ""` is the null sender of bounces. */
function send(envelope: { from: string; to: string }, raw: string) {
  const transport = nodemailer.createTransport({ host: "127.0.0.1", port: inboundPort, secure: false, ignoreTLS: true });
  return transport.sendMail({ envelope, raw }).finally(() => transport.close());
}

/** Sends until accepted: a report is refused with 451 until its delivery's SENT event was consumed. */
async function sendUntilAccepted(envelope: { from: string; to: string }, raw: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await send(envelope, raw);
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function publishSent(deliveryId: string, recipient: string) {
  const event = create(MailEventSchema, {
    eventId: `sent-${deliveryId}`, type: MailEventType.SENT, workspaceId: "ws_acme", source: DeliverySource.TRANSACTIONAL,
    deliveryId, emailId: deliveryId, messageId: `${deliveryId}@acme.test`, recipient, smtpCode: 250, attempt: 1, occurredAt: timestampNow(),
  });
  await publishProto(jetstream(nc), "mail.events.transactional.sent", MailEventSchema, event, event.eventId);
}

async function lastEvent(subject: string): Promise<MailEvent> {
  const msg = await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: subject });
  if (!msg) throw new Error(`no event on ${subject}`);
  return fromBinary(MailEventSchema, msg.data);
}

async function eventCount(subject: string): Promise<number> {
  const info = await jsm.streams.info(EVENTS_STREAM, { subjects_filter: subject });
  return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
}

async function suppressionOf(email: string) {
  const res = await contacts.checkSuppression({ workspaceId: "ws_acme", emails: [email] });
  return res.suppressed[0];
}

async function logs(): Promise<string> {
  const tail = async (unit: string) => (await readFile(path.join(dataDir, "logs", `${unit}.log`), "utf8").catch(() => "")).split("\n").slice(-30).join("\n");
  return `\n--- inbound log\n${await tail("inbound")}\n--- audience log\n${await tail("audience")}\n--- accounts log\n${await tail("accounts")}`;
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-inbound-"));
  nats = await startNats();
  nc = await connectNats(nats.url, "inbound-test");
  await ensureMailStreams(nc);
  jsm = await jetstreamManager(nc);
  await writeFile(path.join(dataDir, "bootstrap.json"), JSON.stringify(BOOTSTRAP));
  const [accountsPort, audiencePort, smtpPort] = [await freePort(), await freePort(), await freePort()];
  inboundPort = smtpPort;
  units = await startUnits({
    env: {
      MAILROOM_NATS_URL: nats.url,
      MAILROOM_DATA_DIR: dataDir,
      MAILROOM_BOOTSTRAP: path.join(dataDir, "bootstrap.json"),
      MAILROOM_SECRET: SECRET,
      MAILROOM_BOUNCE_DOMAIN: BOUNCE_DOMAIN,
      MAILROOM_LOG_LEVEL: "info",
    },
    ports: { accounts: accountsPort, audience: audiencePort, inbound: smtpPort },
    units: ["accounts", "audience", "inbound"],
    output: { kind: "files", dir: path.join(dataDir, "logs") },
  });
  contacts = connectClient(ContactService, `http://127.0.0.1:${audiencePort}`);
  await Promise.all([publishSent(BOUNCED_ID, "ann@example.test"), publishSent(COMPLAINED_ID, "carl@example.test")]);
}, 60_000);

afterAll(async () => {
  await units?.stop();
  await nc?.close();
  await nats?.stop();
  if (dataDir && !process.env.MAILROOM_KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
});

describe("inbound unit over SMTP", () => {
  it("suppresses a hard-bounced address and publishes BOUNCED once, however often the DSN arrives", async () => {
    const to = verpAddress(SECRET, BOUNCED_ID, BOUNCE_DOMAIN)!;
    const raw = await fixture("dsn-hard-5.1.1.eml", BOUNCED_ID);
    const info = await sendUntilAccepted({ from: "", to }, raw).catch(async (err) => {
      throw new Error(`${err.message}${await logs()}`);
    });
    expect(info.accepted).toEqual([to]);
    await send({ from: "", to }, raw); // the MTA delivers the same report again

    expect(await suppressionOf("ann@example.test")).toMatchObject({ email: "ann@example.test", reason: SuppressionReason.HARD_BOUNCE });
    expect(await lastEvent("mail.events.transactional.bounced")).toMatchObject({
      type: MailEventType.BOUNCED, workspaceId: "ws_acme", deliveryId: BOUNCED_ID, recipient: "ann@example.test",
      smtpCode: 550, permanent: true, enhancedStatus: "5.1.1",
    });
    expect(await eventCount("mail.events.transactional.bounced")).toBe(1);
  });

  it("turns an ARF abuse report into a complaint suppression and a COMPLAINED event", async () => {
    const raw = await fixture("arf-abuse.eml", COMPLAINED_ID);
    await sendUntilAccepted({ from: "fbl@isp.example.test", to: `fbl@${BOUNCE_DOMAIN}` }, raw);
    expect(await suppressionOf("carl@example.test")).toMatchObject({ reason: SuppressionReason.COMPLAINT });
    expect(await lastEvent("mail.events.transactional.complained")).toMatchObject({
      type: MailEventType.COMPLAINED, deliveryId: COMPLAINED_ID, recipient: "carl@example.test", detail: "feedback-type abuse from ExampleFBL/1.0",
    });
  });

  it("unsubscribes by mail to the List-Unsubscribe mailto, with the token in the address or the subject", async () => {
    // Broadcast messages: each contact's Message-ID is `<contact>.<broadcast>@…` (a test send's is not).
    const ref = (contactId: string) => ({ workspaceId: "ws_acme", messageId: `${contactId}.cmp_1@acme.test`, contactId, contentId: "cmp_1" });
    const bobToken = signRecipientToken(SECRET, { ...ref("ctc_bob"), email: "bob@example.test" });
    await send({ from: "bob@example.test", to: `unsubscribe+${bobToken}@acme.test` }, "From: bob@example.test\r\nSubject: unsubscribe\r\n\r\nplease\r\n");
    const daveToken = signRecipientToken(SECRET, { ...ref("ctc_dave"), email: "dave@example.test" });
    await send({ from: "dave@example.test", to: `unsubscribe@${BOUNCE_DOMAIN}` }, `From: dave@example.test\r\nSubject: unsubscribe ${daveToken}\r\n\r\n`);

    for (const email of ["bob@example.test", "dave@example.test"]) {
      expect(await suppressionOf(email), email).toMatchObject({ reason: SuppressionReason.UNSUBSCRIBED });
      expect((await contacts.getContact({ workspaceId: "ws_acme", email })).contact?.subscribed, email).toBe(false);
    }
    expect(await lastEvent("mail.events.broadcast.unsubscribed")).toMatchObject({ type: MailEventType.UNSUBSCRIBED, broadcastId: "cmp_1", recipient: "dave@example.test" });
    expect(await eventCount("mail.events.broadcast.unsubscribed")).toBe(2);
  });

  it("refuses every other address at RCPT, a tampered token included", async () => {
    const token = signRecipientToken(SECRET, { workspaceId: "ws_acme", messageId: "m", email: "eve@example.test", contactId: "", contentId: "cmp_1" });
    const tampered = token.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
    for (const to of [`random@${BOUNCE_DOMAIN}`, "victim@gmail.test", `unsubscribe+${tampered}@acme.test`, `bounces+aaaaaaaaaaaaaaaaaaaa@${BOUNCE_DOMAIN}`]) {
      const err = await send({ from: "someone@example.test", to }, "Subject: hi\r\n\r\nhello\r\n").then(() => undefined, (e) => e);
      expect(err, to).toMatchObject({ responseCode: 550 });
    }
    expect(await suppressionOf("eve@example.test")).toBeUndefined();
  });
});
