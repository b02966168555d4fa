import { describe, expect, it } from "vitest";
import { appError } from "@mailroom/kit/errors.js";
import { mime, MX_HOST, testReceiving } from "../../receiving-testing.js";
import { sentDelivery } from "../../testing.js";

const envelope = (to: string | string[], mailFrom = "ann@example.test") => ({ mailFrom, rcptTo: Array.isArray(to) ? to : [to] });
const bytes = (s: string) => new TextEncoder().encode(s);

async function readAll(data: AsyncIterable<Uint8Array>) {
  const chunks: Uint8Array[] = [];
  for await (const c of data) chunks.push(c);
  return Buffer.concat(chunks);
}

describe("inbound domains", () => {
  it("verifies by an MX record naming the inbound host, checked at creation and again on verify", async () => {
    const t = await testReceiving();
    t.mx.zone.set("in.acme.test", ["mx.elsewhere.test"]);
    // Only a workspace whose verified sending domain it is, or is under, may claim it.
    await expect(t.config.createDomain("ws_a", "In.Acme.TEST.")).rejects.toMatchObject({ code: "domain_not_verified", httpStatus: 409 });
    t.sendingDomains.allow("ws_a", "acme.test");
    const created = await t.config.createDomain("ws_a", "In.Acme.TEST.");
    expect(created).toMatchObject({ domain: "in.acme.test", status: "pending", failure: `MX names other hosts: mx.elsewhere.test (publish MX 10 ${MX_HOST})` });
    expect(t.inbound.mailboxOf("support@in.acme.test")).toBeUndefined();

    t.mx.zone.set("in.acme.test", ["mx.elsewhere.test", MX_HOST]);
    const verified = await t.config.verifyDomain("ws_a", created.id);
    expect(verified).toMatchObject({ status: "verified", failure: "" });
    expect(verified.verifiedAt).toBeInstanceOf(Date);

    // A failed lookup does not unverify it; an answer without our host does.
    t.mx.zone.set("in.acme.test", Object.assign(new Error("timeout"), { code: "ETIMEOUT" }));
    expect(await t.config.verifyDomain("ws_a", created.id)).toMatchObject({ status: "verified" });
    t.mx.zone.delete("in.acme.test");
    expect(await t.config.verifyDomain("ws_a", created.id)).toMatchObject({ status: "pending", failure: expect.stringMatching(/^no MX record/) });
  });

  it("gives a domain to one workspace only, and hides each workspace's domains and rules from the others", async () => {
    const t = await testReceiving();
    const d = await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "store" }]);
    // A workspace that does not control the domain is refused as such, and learns nothing of who has it.
    await expect(t.config.createDomain("ws_b", "ACME.test")).rejects.toMatchObject({ code: "domain_not_verified", httpStatus: 409 });
    t.sendingDomains.allow("ws_b", "acme.test");
    await expect(t.config.createDomain("ws_b", "ACME.test")).rejects.toMatchObject({ code: "inbound_domain_taken", httpStatus: 409 });
    await expect(t.config.createDomain("ws_a", "acme.test")).rejects.toMatchObject({ code: "inbound_domain_exists", httpStatus: 409 });
    await expect(t.config.getDomain("ws_b", d.id)).rejects.toMatchObject({ code: "inbound_domain_not_found", httpStatus: 404 });
    await expect(t.config.listRules("ws_b", d.id)).rejects.toMatchObject({ code: "inbound_domain_not_found" });
    await expect(t.config.createRule("ws_b", d.id, { match: "x", action: "store", forwardTo: "" })).rejects.toMatchObject({ code: "inbound_domain_not_found" });
    await expect(t.config.deleteDomain("ws_b", d.id)).rejects.toMatchObject({ code: "inbound_domain_not_found" });
    expect(await t.config.listDomains("ws_b")).toEqual([]);
    expect((await t.config.listDomains("ws_a")).map((x) => x.domain)).toEqual(["acme.test"]);
  });

  it("refuses a second rule for the same match, and a forward back to an inbound domain", async () => {
    const t = await testReceiving();
    const d = await t.verifiedDomain("ws_a", "acme.test", [{ match: "support", action: "webhook" }]);
    await expect(t.config.createRule("ws_a", d.id, { match: "SUPPORT", action: "store", forwardTo: "" })).rejects.toMatchObject({ code: "inbound_rule_exists", httpStatus: 409 });
    await expect(t.config.createRule("ws_a", d.id, { match: "x", action: "forward", forwardTo: "team@acme.test" })).rejects.toMatchObject({ code: "invalid_inbound_rule" });
    const [r] = await t.config.listRules("ws_a", d.id);
    await expect(t.config.deleteRule("ws_a", d.id, "inr_nope")).rejects.toMatchObject({ code: "inbound_rule_not_found", httpStatus: 404 });
    await t.config.deleteRule("ws_a", d.id, r.id);
    // The routing follows at once: no rule, refused at RCPT.
    expect(t.inbound.mailboxOf("support@acme.test")).toBeUndefined();
  });

  it("routes RCPT TO only to a verified domain's matching rule; bounces and unsubscribes keep their mailboxes", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "support", action: "webhook" }, { match: "reply+*", action: "store" }]);
    expect(t.inbound.mailboxOf("Support@ACME.test")).toMatchObject({ kind: "received", route: { workspaceId: "ws_a", action: "webhook", mailboxHash: "" } });
    expect(t.inbound.mailboxOf("reply+T0k3n@acme.test")).toMatchObject({ kind: "received", route: { action: "store", mailboxHash: "T0k3n" } });
    expect(t.inbound.mailboxOf("sales@acme.test")).toBeUndefined();
    expect(t.inbound.mailboxOf("support@other.test")).toBeUndefined();
    expect(t.inbound.mailboxOf(`fbl@bounces.mailroom.test`)).toEqual({ kind: "reports" });
    expect(t.inbound.mailboxOf(`dmarc@${MX_HOST}`)).toMatchObject({ kind: "received", route: { kind: "dmarc" } });
  });
});

describe("receiving", () => {
  it("stores the message and its attachment, publishes EMAIL_RECEIVED listing (not inlining) it, and answers reads of its workspace only", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "support", action: "webhook" }]);
    const pdf = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 256));
    const raw = bytes(mime({
      to: "Support <support@acme.test>", cc: "Carl <carl@example.test>", subject: "Order 42",
      text: "Where is it?\n\nOn Mon, Nov 23, 2026 at 10:00 AM Acme <news@acme.test> wrote:\n> Your order shipped\n",
      attachment: { filename: "invoice.pdf", contentType: "application/pdf", content: pdf },
    }));
    const [outcome] = await t.inbound.receive(envelope(["support@acme.test", "hidden@example.test"]), raw);
    expect(outcome).toMatchObject({ kind: "received", workspaceId: "ws_a", action: "webhook" });
    const id = (outcome as { id: string }).id;
    expect(id).toMatch(/^rcv_[0-9a-f]{26}$/);

    expect(t.webhooks.events).toHaveLength(1);
    const event = t.webhooks.events[0];
    expect(event).toMatchObject({ type: "EMAIL_RECEIVED", workspaceId: "ws_a", eventId: expect.stringMatching(/^evt_/) });
    expect(event.data).toEqual({
      id, from: "ann@example.test", to: ["support@acme.test"], cc: ["carl@example.test"], subject: "Order 42",
      messageId: "m1@example.test", receivedAt: expect.any(String),
      attachments: [{ id: "att_1", filename: "invoice.pdf", contentType: "application/pdf", size: 3000 }],
    });

    const { email, details } = await t.receiver.get("ws_a", id);
    expect(email).toMatchObject({ envelopeTo: ["support@acme.test"], mailFrom: "ann@example.test", size: raw.byteLength, done: true, action: "webhook" });
    expect(details.strippedTextReply).toBe("Where is it?");
    expect(details.text).toContain("Your order shipped");
    expect(details.headers).toContainEqual({ name: "Subject", value: "Order 42" });
    const att = await t.receiver.attachment("ws_a", id, "att_1");
    expect(Buffer.compare(await readAll(att.data), pdf)).toBe(0);
    expect(Buffer.compare(await readAll((await t.receiver.raw("ws_a", id)).data), Buffer.from(raw))).toBe(0);

    // Another workspace: not found, lists nothing.
    await expect(t.receiver.get("ws_b", id)).rejects.toMatchObject({ code: "received_email_not_found", httpStatus: 404 });
    await expect(t.receiver.attachment("ws_b", id, "att_1")).rejects.toMatchObject({ httpStatus: 404 });
    await expect(t.receiver.raw("ws_b", id)).rejects.toMatchObject({ httpStatus: 404 });
    await expect(t.receiver.attachment("ws_a", id, "att_2")).rejects.toMatchObject({ code: "received_attachment_not_found" });
    expect(await t.receiver.list("ws_b", { limit: 10 })).toEqual([]);
  });

  it("is one record and one event however often the sending MTA delivers the message", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "webhook" }]);
    const raw = bytes(mime({}));
    const first = await t.inbound.receive(envelope("support@acme.test"), raw);
    const again = await t.inbound.receive(envelope("support@acme.test"), raw);
    expect(again).toEqual([{ kind: "duplicate", id: (first[0] as { id: string }).id, workspaceId: "ws_a" }]);
    expect(t.webhooks.events).toHaveLength(1);
    expect(await t.receiver.list("ws_a", { limit: 10 })).toHaveLength(1);
  });

  it("completes a message whose first attempt failed (the MTA's retry after a 451), keeping its first receipt time", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "webhook" }]);
    const publish = t.webhooks.publish.bind(t.webhooks);
    t.webhooks.publish = async () => { throw new Error("NATS down"); };
    const raw = bytes(mime({}));
    await expect(t.inbound.receive(envelope("support@acme.test"), raw)).rejects.toThrow("NATS down");
    const [pending] = await t.receiver.list("ws_a", { limit: 10 });
    expect(pending.done).toBe(false);
    t.webhooks.publish = publish;
    const [outcome] = await t.inbound.receive(envelope("support@acme.test"), raw);
    expect(outcome).toMatchObject({ kind: "received", id: pending.id });
    expect((await t.receiver.get("ws_a", pending.id)).email).toMatchObject({ done: true, receivedAt: pending.receivedAt });
    expect(t.webhooks.events).toHaveLength(1);
  });

  it("gives a plus-address's tag as the mailbox hash", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "reply+*", action: "webhook" }]);
    const [outcome] = await t.inbound.receive(envelope("reply+AbC123@acme.test"), bytes(mime({ to: "reply+AbC123@acme.test" })));
    expect(outcome).toMatchObject({ kind: "received" });
    expect(t.webhooks.events[0].data.mailboxHash).toBe("AbC123");
    expect((await t.receiver.get("ws_a", (outcome as { id: string }).id)).email.mailboxHash).toBe("AbC123");
  });

  it("matches a reply to the sent message it answers, in the same workspace only, and publishes REPLIED once", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "webhook" }]);
    const broadcastMail = sentDelivery({ deliveryId: "dlv_b1", workspaceId: "ws_a", source: "broadcast", emailId: "", broadcastId: "cmp_1", contactId: "ctc_ann", messageId: "ctc_ann.cmp_1@acme.test" });
    const otherTenant = sentDelivery({ deliveryId: "trs_other", workspaceId: "ws_b", messageId: "x1@other.test" });
    await t.sent.remember(broadcastMail);
    await t.sent.remember(otherTenant);
    // In-Reply-To names another tenant's message: not a match; References (newest first) names ours.
    const raw = bytes(mime({ messageId: "r1@example.test", inReplyTo: "x1@other.test", references: "<old@x.test> <ctc_ann.cmp_1@acme.test> <x1@other.test>" }));
    const [outcome] = await t.inbound.receive(envelope("news@acme.test"), raw);
    const id = (outcome as { id: string }).id;
    expect(outcome).toMatchObject({ repliedTo: "dlv_b1" });
    expect(t.events.events).toEqual([expect.objectContaining({
      type: "replied", workspaceId: "ws_a", source: "broadcast", deliveryId: "dlv_b1", broadcastId: "cmp_1", contactId: "ctc_ann", detail: id,
    })]);
    expect(t.webhooks.events[0].data.inReplyTo).toEqual({ broadcastId: "cmp_1", contactId: "ctc_ann" });
    expect((await t.receiver.get("ws_a", id)).email.inReplyTo).toEqual({ emailId: "", broadcastId: "cmp_1", contactId: "ctc_ann" });

    // A message answering only the other tenant's: no match, no event.
    await t.inbound.receive(envelope("news@acme.test"), bytes(mime({ messageId: "r2@example.test", inReplyTo: "x1@other.test" })));
    expect(t.events.events).toHaveLength(1);
  });

  it("forwards through the port and records the forward's email id; a refusal by the send path keeps the message", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "team", action: "forward", forwardTo: "crew@elsewhere.test" }, { match: "ops", action: "forward", forwardTo: "ops@elsewhere.test" }]);
    const raw = bytes(mime({ to: "team@acme.test" }));
    const [outcome] = await t.inbound.receive(envelope("team@acme.test", "bob@example.test"), raw);
    const id = (outcome as { id: string }).id;
    expect(t.forwarder.forwards).toEqual([{ workspaceId: "ws_a", receivedId: id, to: "crew@elsewhere.test", mailFrom: "bob@example.test", raw }]);
    expect((await t.receiver.get("ws_a", id)).email.forwardedEmailId).toBe("trs_forward_1");
    expect(t.webhooks.events).toEqual([]);

    t.forwarder.failWith = appError({ code: "email_suppressed", httpStatus: 422, message: "suppressed" });
    const [refused] = await t.inbound.receive(envelope("ops@acme.test"), bytes(mime({ to: "ops@acme.test", messageId: "m2@example.test" })));
    expect((await t.receiver.get("ws_a", (refused as { id: string }).id)).email).toMatchObject({ done: true, forwardedEmailId: "" });
    // Unavailable: the MTA is asked to retry.
    t.forwarder.failWith = new Error("down");
    await expect(t.inbound.receive(envelope("ops@acme.test"), bytes(mime({ to: "ops@acme.test", messageId: "m3@example.test" })))).rejects.toThrow("down");
  });

  it("makes one record per workspace when one message reaches two tenants' domains", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "store" }]);
    await t.verifiedDomain("ws_b", "beta.test", [{ match: "*", action: "store" }]);
    const outcomes = await t.inbound.receive(envelope(["a@acme.test", "b@beta.test", "c@acme.test"]), bytes(mime({ to: "a@acme.test, b@beta.test, c@acme.test" })));
    expect(outcomes.map((o) => [o.kind, (o as { workspaceId: string }).workspaceId])).toEqual([["received", "ws_a"], ["received", "ws_b"]]);
    const [a] = await t.receiver.list("ws_a", { limit: 10 });
    expect(a.envelopeTo).toEqual(["a@acme.test", "c@acme.test"]);
    const [b] = await t.receiver.list("ws_b", { limit: 10 });
    expect(b.envelopeTo).toEqual(["b@beta.test"]);
  });

  it("hands DMARC report mail to the DMARC port before any rule, and never fails by the spam scorer", async () => {
    const t = await testReceiving({ spam: { score: async () => { throw new Error("spamd down"); } } });
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "store" }]);
    const raw = bytes(mime({ to: `dmarc@${MX_HOST}` }));
    expect(await t.inbound.receive(envelope(`dmarc@${MX_HOST}`), raw)).toEqual([{ kind: "dmarc-report" }]);
    expect(t.dmarc.received).toEqual([raw]);
    const [outcome] = await t.inbound.receive(envelope("x@acme.test"), bytes(mime({})));
    const { email } = await t.receiver.get("ws_a", (outcome as { id: string }).id);
    expect(email.spamScore).toBeUndefined();
  });

  it("lists newest first with filters and a keyset cursor", async () => {
    const t = await testReceiving();
    await t.verifiedDomain("ws_a", "acme.test", [{ match: "*", action: "store" }]);
    for (let i = 1; i <= 5; i++) {
      await t.inbound.receive(envelope(`box${i % 2}@acme.test`, `s${i}@example.test`), bytes(mime({ from: `s${i}@example.test`, to: `box${i % 2}@acme.test`, messageId: `m${i}@x.test` })));
    }
    const all = await t.receiver.list("ws_a", { limit: 10 });
    expect(all.map((e) => e.messageId)).toEqual(["m5@x.test", "m4@x.test", "m3@x.test", "m2@x.test", "m1@x.test"]);
    const page2 = await t.receiver.list("ws_a", { limit: 2, after: { receivedAt: all[1].receivedAt, id: all[1].id } });
    expect(page2.map((e) => e.messageId)).toEqual(["m3@x.test", "m2@x.test"]);
    expect((await t.receiver.list("ws_a", { limit: 10, to: "BOX1@acme.test" })).map((e) => e.messageId)).toEqual(["m5@x.test", "m3@x.test", "m1@x.test"]);
    expect((await t.receiver.list("ws_a", { limit: 10, from: "s2@example.test" })).map((e) => e.messageId)).toEqual(["m2@x.test"]);
    expect((await t.receiver.list("ws_a", { limit: 10, since: all[1].receivedAt })).map((e) => e.messageId)).toEqual(["m5@x.test", "m4@x.test"]);
  });
});
