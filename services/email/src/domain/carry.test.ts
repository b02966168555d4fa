import { beforeEach, describe, expect, it } from "vitest";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";
import { recordEvent } from "./outcomes.js";

const WS = "ws_acme";
const bytes = (text: string) => new TextEncoder().encode(text);
const pdf = bytes("%PDF-1.4 invoice");
const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);

const carrying = (over: Partial<EmailRequest> = {}): EmailRequest => ({
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject: "Invoice", html: '<p>Hi <img src="cid:logo@acme"></p>' },
  cc: ["Bob <bob@example.test>"],
  bcc: ["eve@example.test"],
  headers: [{ name: "X-Order", value: "A-1042" }],
  attachments: [
    { filename: "invoice.pdf", content: pdf },
    { filename: "logo.png", content: png, contentId: "logo@acme" },
  ],
  tags: [{ name: "kind", value: "invoice" }, { name: "plan", value: "pro" }],
  ...over,
});

/** DESIGN §9.5 in the email service: record, usage, suppression, content store, job, list, stats, download. */
describe("what an email carries", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
  });

  it("keeps cc, bcc, headers, tags and attachment metadata on the record; the job carries bare cc/bcc and tags; the content store the rest, before the job", async () => {
    const record = await w.service.send(WS, carrying());
    expect(record).toMatchObject({
      status: "SENT",
      cc: ["Bob <bob@example.test>"],
      bcc: ["eve@example.test"],
      headers: [{ name: "X-Order", value: "A-1042" }],
      tags: [{ name: "kind", value: "invoice" }, { name: "plan", value: "pro" }],
      attachments: [
        { filename: "invoice.pdf", contentType: "application/pdf", size: pdf.length },
        { filename: "logo.png", contentType: "image/png", size: png.length, contentId: "logo@acme" },
      ],
    });
    expect(record).not.toHaveProperty("suppressed");
    expect(await w.service.get(WS, record.id)).toEqual(record);

    expect(w.queue.jobs[0]).toMatchObject({ recipient: "ann@example.test", cc: ["bob@example.test"], bcc: ["eve@example.test"], tags: record.tags });
    const extras = w.content.extras.get(`${WS} email:${record.id}`)!;
    expect(extras.cc).toEqual(["Bob <bob@example.test>"]);
    expect(extras.headers).toEqual([{ name: "X-Order", value: "A-1042" }]);
    expect(extras.attachments.map((a) => [a.filename, a.contentType, a.contentId, Buffer.from(a.content).toString("hex")])).toEqual([
      ["invoice.pdf", "application/pdf", "", Buffer.from(pdf).toString("hex")],
      ["logo.png", "image/png", "logo@acme", Buffer.from(png).toString("hex")],
    ]);
    expect(w.log).toEqual([`put email:${record.id}`, `job email:${record.id}`]);
    // Every recipient counts toward the monthly limit.
    expect(w.directory.used).toBe(3);
    const reserved = w.directory.calls.find((c) => c.method === "reserveSendable")!.args[1];
    expect(reserved).toEqual(["ann@example.test", "bob@example.test", "eve@example.test"]);

    const file = await w.service.attachment(WS, record.id, 1);
    expect(file.info).toMatchObject({ filename: "logo.png", contentId: "logo@acme" });
    expect(Buffer.from(file.content).equals(Buffer.from(png))).toBe(true);
    await expect(w.service.attachment(WS, record.id, 2)).rejects.toMatchObject({ code: "attachment_not_found", httpStatus: 404 });
    await expect(w.service.attachment("ws_other", record.id, 0)).rejects.toMatchObject({ code: "email_not_found" });
  });

  it("templated emails carry the same fields", async () => {
    w.directory.templates.set("receipt", { name: "receipt", subject: "Receipt", html: "<p>Thanks</p>", text: "", previewText: "", fromEmail: "billing@acme.test" });
    const record = await w.service.send(WS, carrying({ content: { kind: "templated", template: "receipt", variables: {} } }));
    expect(record).toMatchObject({ status: "SENT", template: "receipt", cc: ["Bob <bob@example.test>"], tags: [{ name: "kind", value: "invoice" }, { name: "plan", value: "pro" }] });
    expect(w.queue.jobs[0]).toMatchObject({ fromEmail: "billing@acme.test", cc: ["bob@example.test"], bcc: ["eve@example.test"] });
    expect(w.content.extras.get(`${WS} email:${record.id}`)!.attachments).toHaveLength(2);
  });

  it("leaves a suppressed cc out of the envelope, shows it on the record and does not count it; the Cc header keeps what was written", async () => {
    w.directory.suppressions.set("bob@example.test", "hard bounce");
    const record = await w.service.send(WS, carrying());
    expect(record.status).toBe("SENT");
    expect(record.suppressed).toEqual([{ email: "bob@example.test", reason: "hard bounce" }]);
    expect(record.cc).toEqual(["Bob <bob@example.test>"]);
    expect(w.queue.jobs[0]).toMatchObject({ cc: [], bcc: ["eve@example.test"] });
    expect(w.content.extras.get(`${WS} email:${record.id}`)!.cc).toEqual(["Bob <bob@example.test>"]);
    expect(w.directory.used).toBe(2);
  });

  it("fails the email when `to` is suppressed and gives back the cc/bcc reservations (nothing is sent)", async () => {
    w.directory.suppressions.set("ann@example.test", "unsubscribed");
    const record = await w.service.send(WS, carrying());
    expect(record.status).toBe("FAILED");
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(0);
  });

  it("refuses the whole request when its recipients exceed the monthly limit (counted per recipient)", async () => {
    w.directory.limit = 2;
    await expect(w.service.send(WS, carrying())).rejects.toMatchObject({ code: "monthly_limit_reached" });
    expect(w.directory.used).toBe(0);
    expect(w.queue.jobs).toHaveLength(0);
    const batch = await w.service.sendBatch(WS, [carrying({ cc: [], bcc: [] }), carrying({ to: "zoe@example.test", cc: [], bcc: [] })]);
    expect(batch.successful).toHaveLength(2);
    expect(w.directory.used).toBe(2);
  });

  it("batch items carry their own fields", async () => {
    const result = await w.service.sendBatch(WS, [carrying(), carrying({ to: "zoe@example.test", cc: undefined, bcc: undefined, tags: [{ name: "kind", value: "receipt" }] }), carrying({ headers: [{ name: "Subject", value: "x" }] })]);
    expect(result.successful.map((r) => r.tags?.[0]?.value)).toEqual(["invoice", "receipt"]);
    expect(result.failed.map((f) => [f.index, f.error.code])).toEqual([[2, "header_not_allowed"]]);
    expect(w.queue.jobs.map((j) => [j.recipient, j.cc, j.bcc])).toEqual([
      ["ann@example.test", ["bob@example.test"], ["eve@example.test"]],
      ["zoe@example.test", [], []],
    ]);
    expect(w.directory.used).toBe(4);
  });

  it("lists by tag (every tag must match) and counts stats by tag from the tagged emails' outcomes", async () => {
    const a = await w.service.send(WS, carrying());
    const b = await w.service.send(WS, carrying({ tags: [{ name: "kind", value: "invoice" }] }));
    await w.service.send(WS, carrying({ tags: [] }));
    const ids = async (tags: string[]) => (await w.service.list(WS, { tags })).emails.map((e) => e.id);
    expect(await ids(["kind:invoice"])).toEqual([b.id, a.id]);
    expect(await ids(["kind:invoice", "plan:pro"])).toEqual([a.id]);
    expect(await ids(["kind:receipt"])).toEqual([]);
    await expect(w.service.list(WS, { tags: ["kind"] })).rejects.toMatchObject({ code: "invalid_request" });

    await recordEvent(w.outcomeDeps, { eventId: "e1", emailId: a.id, kind: "sent", at: w.clock.now() });
    await recordEvent(w.outcomeDeps, { eventId: "e2", emailId: a.id, kind: "opened", at: w.clock.now() });
    await recordEvent(w.outcomeDeps, { eventId: "e3", emailId: b.id, kind: "bounced", permanent: true, at: w.clock.now() });
    const day = w.clock.now().toISOString().slice(0, 10);
    const pro = await w.service.stats(WS, { from: day, to: day, tags: ["plan:pro"] });
    expect(pro.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1, opens: 1, bounced: 0 });
    const invoices = await w.service.stats(WS, { from: day, to: day, tags: ["kind:invoice"] });
    expect(invoices.totals).toMatchObject({ sent: 2, delivered: 1, bounced: 1, hardBounced: 1 });
    expect(invoices.days).toEqual([{ date: day, counters: invoices.totals }]);
    const none = await w.service.stats(WS, { from: day, to: day, tags: ["kind:receipt"] });
    expect(none.totals.sent).toBe(0);
    await expect(w.service.stats(WS, { tags: ["a:b c"] })).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("idempotency covers the new fields: the same payload replays, another attachment or tag is idempotency_key_reused", async () => {
    const first = await w.service.send(WS, carrying({ idempotencyKey: "inv-1" }));
    expect((await w.service.send(WS, carrying({ idempotencyKey: "inv-1" }))).id).toBe(first.id);
    await expect(
      w.service.send(WS, carrying({ idempotencyKey: "inv-1", attachments: [{ filename: "invoice.pdf", content: bytes("%PDF-1.4 other") }] })),
    ).rejects.toMatchObject({ code: "idempotency_key_reused" });
    await expect(w.service.send(WS, carrying({ idempotencyKey: "inv-1", tags: [] }))).rejects.toMatchObject({ code: "idempotency_key_reused" });
    expect(w.queue.jobs).toHaveLength(1);
  });

  it("a scheduled email keeps everything: released later with its attachments read back from the store; cancelling gives back every recipient", async () => {
    const later = await w.service.send(WS, carrying({ sendAt: new Date(w.clock.now().getTime() + 3600_000) }));
    expect(later.status).toBe("SCHEDULED");
    expect(w.content.extras.size).toBe(0);
    w.clock.advance(3600_000);
    expect(await w.scheduler().tick()).toBe(1);
    expect(w.queue.jobs[0]).toMatchObject({ cc: ["bob@example.test"], bcc: ["eve@example.test"], tags: later.tags });
    const extras = w.content.extras.get(`${WS} email:${later.id}`)!;
    expect(extras.attachments.map((a) => Buffer.from(a.content).toString("hex"))).toEqual([Buffer.from(pdf).toString("hex"), Buffer.from(png).toString("hex")]);
    expect(extras.headers).toEqual([{ name: "X-Order", value: "A-1042" }]);

    const cancelled = await w.service.send(WS, carrying({ sendAt: new Date(w.clock.now().getTime() + 3600_000) }));
    expect(w.directory.used).toBe(6);
    await w.service.cancel(WS, cancelled.id);
    expect(w.directory.used).toBe(3);
  });

  it("attachments go with the email's content once it is final (here kept for no time), and stay while it is not", async () => {
    const record = await w.service.send(WS, carrying());
    const other = await w.service.send(WS, carrying({ to: "zoe@example.test" }));
    await recordEvent(w.outcomeDeps, { eventId: "d1", emailId: record.id, kind: "sent", at: w.clock.now() });
    expect((await w.service.get(WS, record.id)).status).toBe("DELIVERED");
    await expect(w.service.attachment(WS, record.id, 0)).rejects.toMatchObject({ code: "attachment_not_found", message: expect.stringContaining("no longer kept") });
    expect((await w.service.attachment(WS, other.id, 0)).content.length).toBe(pdf.length);
  });

  it("erasing the recipient's emails erases their attachments too", async () => {
    const record = await w.service.send(WS, carrying());
    expect((await w.service.attachment(WS, record.id, 0)).content.length).toBe(pdf.length);
    expect(await w.service.eraseRecipient(WS, "ann@example.test")).toBe(1);
    expect(await w.deps.emails.attachmentContent(WS, record.id, 0)).toBeNull();
    expect(await w.deps.emails.attachmentContent(WS, record.id, 1)).toBeNull();
  });
});
