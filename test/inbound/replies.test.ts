/**
 * DESIGN §10.4's reply consumers with the real processes: MAIL_EVENT_TYPE_REPLIED, as the inbound
 * unit publishes it on MAIL_EVENTS (mail.events.<source>.replied, detail = the rcv id), puts a
 * "replied" entry on a transactional email (its status unchanged), counts a broadcast's
 * replying recipients in its stats (`replied` in GET /v1/broadcasts/:id/stats), each once
 * however often the event is redelivered or the recipient replies, and takes an automation run
 * waiting for `email_replied` on the email it sent into `then`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import { connectClient } from "@mailroom/kit/connect.js";
import { connectNats, publishProto, type NatsConnection } from "@mailroom/kit/jetstream.js";
import { BroadcastService, BroadcastStatus, DeliveryMethod } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import type { TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { mailsTo, stepsById, waitingIn } from "../automation/support.js";

const WS = "ws_replies";
const KEY = "mr_test_replies_1";

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: timed out; last ${JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? Number(v) : v)).slice(0, 800)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe("replies counted on the email and the broadcast they answer", () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let emails: ReturnType<typeof connectClient<typeof EmailService>>;
  let broadcasts: ReturnType<typeof connectClient<typeof BroadcastService>>;

  /** A REPLIED event as the inbound unit publishes it (its id derived from the received email). */
  const replied = (source: DeliverySource, rcv: string, fields: { emailId?: string; broadcastId?: string; contactId?: string; messageId?: string }) => {
    const event = create(MailEventSchema, {
      eventId: `replied.${rcv}`, type: MailEventType.REPLIED, workspaceId: WS, source, detail: rcv, occurredAt: timestampNow(), ...fields,
    });
    const name = source === DeliverySource.BROADCAST ? "broadcast" : "transactional";
    return publishProto(jetstream(nc), `mail.events.${name}.replied`, MailEventSchema, event, event.eventId);
  };

  beforeAll(async () => {
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: WS, name: "Replies", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["replies.test"], members: ["owner@replies.test"],
          flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
          templates: [
            { name: "ask", subject: "ask for {{firstName}}", html: "<p>Anything to tell us?</p>", fromEmail: "team@replies.test", fromName: "Team" },
            { name: "thanks", subject: "thanks for {{firstName}}", html: "<p>Thanks for your reply</p>", fromEmail: "team@replies.test", fromName: "Team" },
            { name: "nudge", subject: "nudge for {{firstName}}", html: "<p>Still there?</p>", fromEmail: "team@replies.test", fromName: "Team" },
          ],
          contacts: [
            { email: "ann@example.test", firstName: "Ann", subscribed: true },
            { email: "bob@example.test", firstName: "Bob", subscribed: true },
            { email: "cid@example.test", firstName: "Cid", subscribed: true },
          ],
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "broadcast", "webhooks", "automation", "gateway"],
    });
    nc = await connectNats(sys.nats.url, "replies-test");
    emails = connectClient(EmailService, `http://127.0.0.1:${sys.ports.email}`);
    broadcasts = connectClient(BroadcastService, `http://127.0.0.1:${sys.ports.broadcast}`);
  }, 180_000);
  afterAll(async () => {
    await nc?.close();
    await sys?.stop();
  });

  it("a transactional email shows its replies, once each, and keeps its status", async () => {
    const sent = await sys.api("POST", "/v1/emails", { key: KEY, body: { from: "help@replies.test", to: "reader@example.test", subject: "Your ticket", html: "<p>Reply to this</p>" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.email.id as string;
    await until("delivered", async () => (await emails.getEmail({ workspaceId: WS, id })).email!, (e) => e.status === EmailStatus.DELIVERED);

    await replied(DeliverySource.TRANSACTIONAL, "rcv_t1", { emailId: id });
    await replied(DeliverySource.TRANSACTIONAL, "rcv_t1", { emailId: id }); // the same event again
    await replied(DeliverySource.TRANSACTIONAL, "rcv_t2", { emailId: id });
    const email = await until("two replies", async () => (await emails.getEmail({ workspaceId: WS, id })).email!, (e) => (e.outcomes?.replies ?? 0) >= 2);
    expect(email.status).toBe(EmailStatus.DELIVERED);
    expect(email.outcomes).toMatchObject({ replies: 2, lastEvent: "DELIVERED" });
    expect(["rcv_t1", "rcv_t2"]).toContain(email.outcomes!.lastReplyId);
    // The public record carries no reply fields (the console's timeline does).
    const record = await sys.api("GET", `/v1/emails/${id}`, { key: KEY });
    expect(JSON.stringify(record.body)).not.toMatch(/"replies"|lastRepl|rcv_t/);
  });

  it("a broadcast counts its replying recipients in its stats", async () => {
    const { broadcast } = await broadcasts.createBroadcast({
      workspaceId: WS, name: "Ask", subject: "Tell us #replies-bc", fromEmail: "news@replies.test", fromName: "News",
      html: "<html><body><p>Hi {{firstName}}, what do you think?</p></body></html>", audience: { all: true },
    });
    const id = broadcast!.id;
    await broadcasts.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.ASAP });
    await until("completed", async () => (await broadcasts.getBroadcast({ workspaceId: WS, id })).broadcast!, (b) => b.status === BroadcastStatus.COMPLETED);
    // Each recipient's Message-ID names its contact and the broadcast: `<contact>.<broadcast>@…`.
    const messageIds = sys.sink!.messages
      .filter((m) => m.raw.includes("#replies-bc"))
      .map((m) => ({ to: m.to[0]!, messageId: /^Message-ID: <([^>]+)>/im.exec(m.raw)![1]! }));
    expect(messageIds).toHaveLength(3);
    const of = (email: string) => {
      const { messageId } = messageIds.find((m) => m.to === email)!;
      return { broadcastId: id, contactId: messageId.split(".")[0]!, messageId };
    };
    await replied(DeliverySource.BROADCAST, "rcv_b1", of("ann@example.test"));
    await replied(DeliverySource.BROADCAST, "rcv_b2", of("ann@example.test")); // Ann again: one replier
    await replied(DeliverySource.BROADCAST, "rcv_b3", of("bob@example.test"));
    const stats = await until("two repliers", async () => (await sys.api("GET", `/v1/broadcasts/${id}/stats`, { key: KEY })).body.stats, (s) => s?.replied >= 2);
    expect(stats).toMatchObject({ replied: 2, recipients: 3, delivered: 3 });
    await new Promise((r) => setTimeout(r, 500));
    expect((await sys.api("GET", `/v1/broadcasts/${id}/stats`, { key: KEY })).body.stats.replied).toBe(2);
  });

  it("an automation waiting for email_replied on the email its run sent goes on into then", async () => {
    const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });
    const created = await api("POST", "/v1/automations", {
      name: "Ask and thank",
      trigger: { type: "contact_created" },
      steps: [
        { id: "ask", type: "send", template: "ask" },
        { id: "wait", type: "wait_for_event", event: "email_replied", timeout: "P2D", then: [{ id: "thanks", type: "send", template: "thanks" }], else: [{ id: "nudge", type: "send", template: "nudge" }] },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.automation.id as string;
    expect((await api("POST", `/v1/automations/${id}/activate`, {})).status).toBe(200);
    const contact = await api("POST", "/v1/contacts", { properties: { email: "dan@example.test", firstName: "Dan" } });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
    const runsOf = async () => (await api("GET", `/v1/automations/${id}/runs?limit=10`)).body.runs.items as any[];
    const [run] = await until("the run waits for the reply", runsOf, (r) => waitingIn(r[0], "wait"));
    const emailId = stepsById(run).ask.emailId as string;
    expect(emailId).toMatch(/^trs_/);
    await until("the ask email is delivered", async () => mailsTo(sys, "dan@example.test"), (m) => m.length === 1);

    await replied(DeliverySource.TRANSACTIONAL, "rcv_a1", { emailId, contactId: contact.body.contact.id });
    const [done] = await until("the run completes through then", runsOf, (r) => r[0]?.status === "COMPLETED");
    expect(stepsById(done).wait.branch).toBe("then");
    await until("thanks is sent", async () => mailsTo(sys, "dan@example.test").map((m) => m.subject), (s) => s.length === 2);
    expect(mailsTo(sys, "dan@example.test").map((m) => m.subject)).toEqual(["ask for Dan", "thanks for Dan"]);
  });
});
