import { beforeEach, describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestWorld, decodeCompiled, type TestWorld } from "../testing.js";
import type { EmailRequest, RawContent } from "./model.js";

const WS = "ws_acme";
type RawOverrides = Omit<Partial<EmailRequest>, "content"> & { content?: Partial<RawContent> };
const raw = (over: RawOverrides = {}): EmailRequest => {
  const { content, ...rest } = over;
  return {
    to: "ann@example.test",
    content: { kind: "raw", from: "Acme <team@acme.test>", subject: "Hello", html: "<p>Hi</p>", ...content },
    ...rest,
  };
};
const templated = (over: Partial<EmailRequest> = {}): EmailRequest => ({
  to: "bob@example.test",
  content: { kind: "templated", template: "welcome", variables: { firstName: "Bob" } },
  ...over,
});

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("sending one email", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
    w.directory.templates.set("welcome", { name: "welcome", subject: "Hi {{firstName}}", html: "<p>Welcome {{firstName}}</p>", text: "", previewText: "Your account" });
  });

  it("accepts a raw email: SENT record with from and subject, job queued with the parsed sender", async () => {
    const record = await w.service.send(WS, raw({ replyTo: ["Help Desk <help@acme.test>"], content: { text: "plain", previewText: "peek" } }));
    expect(record).toMatchObject({ status: "SENT", type: "raw", to: "ann@example.test", from: "Acme <team@acme.test>", subject: "Hello" });
    expect(record.id).toMatch(/^trs_[0-9a-z]{26}$/);
    expect(record.messageId).toMatch(/@acme\.test$/);
    expect(record).not.toHaveProperty("template");
    expect(record).not.toHaveProperty("groupBy");

    expect(w.queue.jobs).toHaveLength(1);
    expect(w.queue.jobs[0]).toMatchObject({
      deliveryId: record.id, emailId: record.id, messageId: record.messageId, recipient: "ann@example.test",
      fromEmail: "team@acme.test", fromName: "Acme", replyTo: ["help@acme.test"], contentRef: `email:${record.id}`,
    });
    expect(w.renderer.inputs[0]).toMatchObject({
      contentId: record.id, subject: "Hello", html: "<p>Hi</p>", text: "plain", previewText: "peek", trackClicks: true, trackOpens: false,
    });
    expect(w.directory.used).toBe(1);
    const compiled = decodeCompiled(await w.service.compiledContent(WS, record.id));
    expect(compiled).toMatchObject({ contentId: record.id, workspaceId: WS, trackClicks: true, trackOpens: false });
  });

  it("sends a templated email from the workspace's sender with the template's content and the variables", async () => {
    const record = await w.service.send(WS, templated({ groupBy: "onboarding" }));
    expect(record).toMatchObject({ status: "SENT", type: "templated", template: "welcome", groupBy: "onboarding", to: "bob@example.test" });
    expect(record).not.toHaveProperty("from");
    expect(record).not.toHaveProperty("subject");
    expect(w.renderer.inputs[0]).toMatchObject({ subject: "Hi {{firstName}}", html: "<p>Welcome {{firstName}}</p>", previewText: "Your account", trackClicks: true, trackOpens: true });
    expect(w.queue.jobs[0]).toMatchObject({ fromEmail: "founder@gmail.test", variables: { firstName: "Bob" }, groupBy: "onboarding" });
  });

  it("puts every Reply-To address on the job, raw or templated, duplicates dropped case-insensitively", async () => {
    await w.service.send(WS, raw({ replyTo: ["Help <help@acme.test>", "sales@acme.test", "HELP@acme.test"] }));
    await w.service.send(WS, templated({ replyTo: ["owner@acme.test"] }));
    await w.service.send(WS, templated());
    expect(w.queue.jobs.map((j) => j.replyTo)).toEqual([["help@acme.test", "sales@acme.test"], ["owner@acme.test"], undefined]);
    for (const replyTo of [["not an address"], ["a@acme.test, b@acme.test"], ["a@x.test", "b@x.test", "c@x.test", "d@x.test", "e@x.test", "f@x.test"]]) {
      const err = await refusal(w.service.send(WS, raw({ replyTo })));
      expect(err, JSON.stringify(replyTo)).toMatchObject({ code: "invalid_request", httpStatus: 400 });
    }
    expect(w.queue.jobs).toHaveLength(3);
  });

  it("asks the renderer to compile raw content without Liquid markup literally and templates with variables", async () => {
    await w.service.send(WS, raw({ content: { html: "<p>{ name } and {{</p>", subject: "50% off {x}" } }));
    await w.service.send(WS, templated());
    expect(w.renderer.inputs.map((i) => i.literal)).toEqual([true, false]);
    expect(w.renderer.inputs[0]!.liquid).toBeUndefined();
  });

  it("has a raw email's Liquid rendered with its contactProperties (DESIGN §10.2), keyed by its content", async () => {
    const content = { html: "<p>Hi {{ name | default: 'there' }}</p>", text: "{% if vip %}VIP{% endif %}", contactProperties: { name: "Ann" } };
    await w.service.send(WS, raw({ content }));
    await w.service.send(WS, raw({ content: { ...content, contactProperties: { name: "Bo" } } }));
    await w.service.send(WS, raw({ content: { ...content, subject: "Other {{ name }}" } }));
    const [a, b, c] = w.renderer.inputs;
    expect(a!.literal).toBe(false);
    expect(a!.liquid).toMatchObject({ raw: true, variables: { name: "Ann" }, template: { html: content.html, text: content.text } });
    expect(b!.liquid!.variables).toEqual({ name: "Bo" });
    expect(b!.liquid!.template.liquidKey).toBe(a!.liquid!.template.liquidKey);
    expect(c!.liquid!.template.liquidKey).not.toBe(a!.liquid!.template.liquidKey);
    // Relayed by SMTP submission: finished content, sent as given.
    await w.service.send(WS, raw({ content: { ...content, asGiven: true } }));
    expect(w.renderer.inputs[3]).toMatchObject({ literal: true, html: content.html });
    expect(w.renderer.inputs[3]!.liquid).toBeUndefined();
  });

  it("refuses more than 5 MB of HTML with 413 payload_too_large", async () => {
    const ok = await w.service.send(WS, raw({ content: { html: "x".repeat(5 * 1024 * 1024) } }));
    expect(ok.status).toBe("SENT");
    const err = await refusal(w.service.send(WS, raw({ content: { html: "é".repeat(2.5 * 1024 * 1024 + 1) } })));
    expect(err).toMatchObject({ code: "payload_too_large", httpStatus: 413 });
  });

  it("honours explicit tracking settings", async () => {
    await w.service.send(WS, raw({ settings: { trackClicks: false, trackOpens: true } }));
    await w.service.send(WS, templated({ settings: { trackOpens: false } }));
    expect(w.renderer.inputs.map((i) => [i.trackClicks, i.trackOpens])).toEqual([[false, true], [true, false]]);
  });

  it("refuses an unverified sender with the allowed lists, sending and counting nothing", async () => {
    const err = await refusal(w.service.send(WS, raw({ content: { from: "eve@evil.test" } })));
    expect(err).toMatchObject({ code: "invalid_from", httpStatus: 400, details: { allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] } });
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(0);
  });

  it("refuses an unknown template and names it", async () => {
    const err = await refusal(w.service.send(WS, templated({ content: { kind: "templated", template: "nope", variables: {} } })));
    expect(err.code).toBe("template_not_found");
    expect(err.message).toContain('"nope"');
    expect(w.queue.jobs).toHaveLength(0);
  });

  it.each(["layout", "snippet"] as const)("refuses a template of kind %s: it is part of templates, never sent on its own", async (kind) => {
    w.directory.templates.set("frame", { name: "frame", kind, subject: "", html: "<div>{{ content }}</div>", text: "", previewText: "" });
    const err = await refusal(w.service.send(WS, templated({ content: { kind: "templated", template: "frame", variables: {} } })));
    expect(err).toMatchObject({ code: "invalid_template", httpStatus: 400, details: { extra: { template: '"frame"', kind: JSON.stringify(kind) } } });
    expect(err.message).toContain(`"frame" is a ${kind}`);
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(0);
    // In a batch only that item fails.
    const batch = await w.service.sendBatch(WS, [templated(), templated({ content: { kind: "templated", template: "frame", variables: {} } })]);
    expect(batch.successful).toHaveLength(1);
    expect(batch.failed.map((f) => [f.index, f.error.code])).toEqual([[1, "invalid_template"]]);
    expect(w.queue.jobs).toHaveLength(1);
  });

  it.each([
    ["to", raw({ to: "ann@example.test\r\nBcc: all@example.test" })],
    ["from", raw({ content: { from: "team@acme.test\nBcc: x@y.test" } })],
    ["fromName", raw({ content: { fromName: "Acme\r\nX-Evil: 1" } })],
    ["subject", raw({ content: { subject: "Hi\r\nBcc: all@example.test" } })],
    ["replyTo", raw({ replyTo: ["a@acme.test\u0000"] })],
    ["replyTo", raw({ replyTo: ["ok@acme.test", "b@acme.test\r\nBcc: all@example.test"] })],
    ["replyTo", templated({ replyTo: ["b@acme.test\nBcc: all@example.test"] })],
    ["subject", raw({ content: { subject: "Hi\u0085Bcc: all@example.test" } })],
    ["subject", raw({ content: { subject: "Hi\u2028Bcc: all@example.test" } })],
    ["to", raw({ to: "ann@example.test\u009b" })],
  ])("refuses control characters in %s (no header injection)", async (field, req) => {
    const err = await refusal(w.service.send(WS, req));
    expect(err).toMatchObject({ code: "header_injection", httpStatus: 400 });
    expect(err.message).toContain(field);
    expect(w.directory.calls).toHaveLength(0);
  });

  it("refuses a recipient that is not one address", async () => {
    for (const to of ["not-an-address", "a@b.test, c@d.test", ""]) {
      const err = await refusal(w.service.send(WS, raw({ to })));
      expect(err.httpStatus).toBe(400);
    }
  });

  it("schedules a future sendAt, sends a past one now, refuses one beyond 90 days", async () => {
    const now = w.clock.now().getTime();
    const past = await w.service.send(WS, raw({ sendAt: new Date(now - 60_000) }));
    expect(past.status).toBe("SENT");
    expect(past).not.toHaveProperty("sendAt");

    const at90 = new Date(now + 90 * 24 * 3600 * 1000);
    const scheduled = await w.service.send(WS, raw({ sendAt: at90 }));
    expect(scheduled).toMatchObject({ status: "SCHEDULED", sendAt: at90 });
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([past.id]);

    const err = await refusal(w.service.send(WS, raw({ sendAt: new Date(at90.getTime() + 1000) })));
    expect(err).toMatchObject({ code: "send_at_out_of_range", httpStatus: 400 });
    const bad = await refusal(w.service.send(WS, raw({ sendAt: new Date("nonsense") })));
    expect(bad.code).toBe("invalid_send_at");
  });

  it("accepts a suppressed recipient with a FAILED record and a reason, never queued nor counted", async () => {
    w.directory.suppressions.set("ann@example.test", "hard bounce");
    const record = await w.service.send(WS, raw({ to: "Ann@Example.test" }));
    expect(record.status).toBe("FAILED");
    expect(record.statusReason).toContain("hard bounce");
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(0);
    expect((await w.service.get(WS, record.id)).status).toBe("FAILED");
  });

  it("records a suppressed recipient FAILED even when its content would not compile (compiled before the check answered)", async () => {
    w.directory.suppressions.set("ann@example.test", "unsubscribed");
    const record = await w.service.send(WS, raw({ content: { html: "<p>x</p><!--reject-->" } }));
    expect(record).toMatchObject({ status: "FAILED" });
    expect(record.statusReason).toContain("unsubscribed");
    expect(await w.deps.emails.compiledContent(WS, record.id)).toBeNull();
    expect(w.directory.used).toBe(0);
  });

  it("refuses with 403 when the monthly limit is reached and stores nothing", async () => {
    w.directory.limit = 1;
    await w.service.send(WS, raw());
    const err = await refusal(w.service.send(WS, raw()));
    expect(err).toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
    expect(w.queue.jobs).toHaveLength(1);
    expect(w.directory.used).toBe(1);
  });

  it("upserts the recipient contact with contactProperties and hands them to the merge", async () => {
    await w.service.send(WS, raw({ content: { contactProperties: { firstName: "Ann", plan: "pro" } } }));
    expect(w.directory.upserts).toEqual([{ workspaceId: WS, email: "ann@example.test", properties: { firstName: "Ann", plan: "pro" } }]);
    expect(w.queue.jobs[0].variables).toEqual({ firstName: "Ann", plan: "pro" });
  });

  it("returns a clean 404 for another workspace's email", async () => {
    const record = await w.service.send(WS, raw());
    await expect(w.service.get("ws_other", record.id)).rejects.toMatchObject({ code: "email_not_found", httpStatus: 404 });
    await expect(w.service.compiledContent("ws_other", record.id)).rejects.toMatchObject({ httpStatus: 404 });
    expect((await w.service.get(WS, record.id)).id).toBe(record.id);
  });

  it("puts small content in the job itself (nothing written to the content store), now and when the scheduler publishes later", async () => {
    w.content.inlineBytes = 64 * 1024;
    const now = await w.service.send(WS, raw());
    expect(w.content.get(WS, `email:${now.id}`), "nothing in the content store").toBeUndefined();
    const job = w.queue.published[0]!;
    expect(job.contentRef).toBe(`email:${now.id}`);
    expect(decodeCompiled(job.content)).toMatchObject({ contentId: now.id, workspaceId: WS });
    expect(w.log).toEqual([`inline email:${now.id}`, `job email:${now.id}`]);

    const later = await w.service.send(WS, raw({ sendAt: new Date(w.clock.now().getTime() + 60_000) }));
    w.clock.advance(61_000);
    expect(await w.scheduler("other-process").tick()).toBe(1);
    const released = w.queue.published.find((j) => j.emailId === later.id)!;
    expect(decodeCompiled(released.content)).toMatchObject({ contentId: later.id });
    expect(w.content.get(WS, `email:${later.id}`)).toBeUndefined();

    // Content with attachments or over the limit goes to the store, and its job carries none.
    w.content.inlineBytes = 10;
    const big = await w.service.send(WS, raw());
    expect(w.content.get(WS, `email:${big.id}`)).toBeDefined();
    expect(w.queue.published.find((j) => j.emailId === big.id)!.content).toHaveLength(0);
  });

  it("keeps the email when publishing fails and the scheduler queues it later", async () => {
    w.queue.failNext = 1;
    const record = await w.service.send(WS, raw());
    expect(record.status).toBe("SENT");
    expect(w.queue.jobs).toHaveLength(0);
    const scheduler = w.scheduler("other-process");
    expect(await scheduler.tick()).toBe(0); // the retry delay has not passed
    w.clock.advance(6_000);
    expect(await scheduler.tick()).toBe(1);
    expect(w.queue.jobs.map((j) => j.emailId)).toEqual([record.id]);
    expect(await scheduler.tick()).toBe(0);
  });

  it("frees reserved usage and reports 503-style failure when a dependency is down", async () => {
    w.directory.failing.add("reserveSendable");
    await expect(w.service.send(WS, raw())).rejects.toThrow(/unavailable/);
    expect(w.directory.used).toBe(0);
    expect(w.queue.jobs).toHaveLength(0);
  });
});

describe("sending a batch", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
    w.directory.templates.set("welcome", { name: "welcome", subject: "Hi", html: "<p>Hi</p>", text: "", previewText: "" });
  });

  it("sends the valid items and fails each invalid one with its index and own error", async () => {
    const future = new Date(w.clock.now().getTime() + 3600_000);
    const result = await w.service.sendBatch(WS, [
      raw({ groupBy: "g1" }),
      raw({ content: { from: "eve@evil.test" } }),
      templated({ sendAt: future }),
      templated({ content: { kind: "templated", template: "missing", variables: {} } }),
      raw({ to: "x@example.test\r\nBcc: y@example.test" }),
      raw({ content: { html: "<p>bad</p><!--reject-->" } }),
    ]);
    expect(result.successful.map((r) => [r.type, r.status, r.groupBy])).toEqual([
      ["raw", "SENT", "g1"],
      ["templated", "SCHEDULED", undefined],
    ]);
    expect(result.failed.map((f) => [f.index, f.error.code])).toEqual([
      [1, "invalid_from"],
      [3, "template_not_found"],
      [4, "header_injection"],
      [5, "invalid_request"],
    ]);
    expect(result.failed[0].to).toBe("ann@example.test");
    expect(result.failed[0].error.details.allowedDomains).toEqual(["acme.test"]);
    // Reserved for the three that passed the checks at once, then the compile failure returned.
    expect(w.directory.calls.filter((c) => c.method === "reserveSendable").map((c) => (c.args[1] as string[]).length)).toEqual([3]);
    expect(w.directory.used).toBe(2);
    expect(w.queue.jobs).toHaveLength(1);
  });

  it("checks each distinct sender once and looks suppressions up and reserves usage in one call", async () => {
    await w.service.sendBatch(WS, Array.from({ length: 10 }, (_, i) => raw({ to: `u${i}@example.test` })));
    expect(w.directory.count("checkSender")).toBe(1);
    expect(w.directory.count("reserveSendable")).toBe(1);
    expect(w.queue.jobs).toHaveLength(10);
  });

  it("refuses an empty batch and one over 50 without sending anything", async () => {
    await expect(w.service.sendBatch(WS, [])).rejects.toMatchObject({ code: "batch_invalid", httpStatus: 400 });
    await expect(w.service.sendBatch(WS, Array.from({ length: 51 }, () => raw()))).rejects.toMatchObject({ code: "batch_invalid" });
    expect(w.directory.calls).toHaveLength(0);
    const fifty = await w.service.sendBatch(WS, Array.from({ length: 50 }, () => raw()));
    expect(fifty.successful).toHaveLength(50);
  });

  it("does not count suppressed recipients against the limit of a batch", async () => {
    w.directory.limit = 2;
    w.directory.suppressions.set("gone@example.test", "hard bounce");
    const result = await w.service.sendBatch(WS, [raw({ to: "gone@example.test" }), raw(), templated(), raw({ to: "GONE@example.test" })]);
    expect(result.successful.map((r) => r.status)).toEqual(["FAILED", "SENT", "SENT", "FAILED"]);
    expect(w.directory.used).toBe(2);
    expect(w.queue.jobs).toHaveLength(2);
    const full = await refusal(w.service.sendBatch(WS, [raw({ to: "gone@example.test" }), raw()]));
    expect(full).toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
  });

  it("sends nothing when the batch would cross the monthly limit", async () => {
    w.directory.limit = 5;
    w.directory.used = 3;
    await expect(w.service.sendBatch(WS, [raw(), raw(), raw()])).rejects.toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.used).toBe(3);
    const ok = await w.service.sendBatch(WS, [raw(), raw()]);
    expect(ok.successful).toHaveLength(2);
  });

  it("refuses only the emails past the limit when the emails are independent (coalesced single sends)", async () => {
    w.directory.limit = 5;
    w.directory.used = 3;
    w.directory.suppressions.set("gone@example.test", "hard bounce");
    const emails = [raw({ to: "a@example.test" }), raw({ to: "gone@example.test" }), raw({ to: "b@example.test" }), raw({ to: "c@example.test" }), templated()];
    const result = await w.service.sendBatch(WS, emails, { independent: true });
    // Each email reserves on its own: two fit, the suppressed one needs nothing, two are refused alone.
    expect(result.successful.map((r) => [r.to, r.status])).toEqual([
      ["a@example.test", "SENT"],
      ["gone@example.test", "FAILED"],
      ["b@example.test", "SENT"],
    ]);
    expect(result.failed.map((f) => [f.index, f.error.code, f.error.httpStatus])).toEqual([
      [3, "monthly_limit_reached", 403],
      [4, "monthly_limit_reached", 403],
    ]);
    expect(w.queue.jobs.map((j) => j.recipient)).toEqual(["a@example.test", "b@example.test"]);
    expect(w.directory.used).toBe(5);
    expect(w.directory.count("releaseUsage")).toBe(0);
  });

  it("gives back the reservations of independent emails that were not stored", async () => {
    w.directory.limit = 10;
    const emails = [raw({ to: "a@example.test" }), raw({ to: "b@example.test", content: { html: w.renderer.rejectMarker } }), raw({ to: "c@example.test" })];
    const result = await w.service.sendBatch(WS, emails, { independent: true });
    expect(result.successful.map((r) => r.to)).toEqual(["a@example.test", "c@example.test"]);
    expect(result.failed.map((f) => f.error.code)).toEqual(["invalid_request"]);
    expect(w.directory.used).toBe(2);
  });

  it("answers with the stored items when storing one item fails, so a retry cannot send them twice", async () => {
    const insert = w.deps.emails.insert.bind(w.deps.emails);
    w.deps.emails.insert = async (email) => {
      if (email.to === "broken@example.test") throw new Error("disk full");
      return insert(email);
    };
    const result = await w.service.sendBatch(WS, [raw({ to: "a@example.test" }), raw({ to: "broken@example.test" }), templated()]);
    expect(result.successful.map((r) => r.to)).toEqual(["a@example.test", "bob@example.test"]);
    expect(result.failed.map((f) => [f.index, f.error.code, f.error.httpStatus])).toEqual([[1, "service_unavailable", 503]]);
    expect(w.queue.jobs.map((j) => j.recipient).sort()).toEqual(["a@example.test", "bob@example.test"]);
    expect(w.directory.used).toBe(2);
    await expect(w.service.send(WS, raw({ to: "broken@example.test" }))).rejects.toMatchObject({ code: "service_unavailable", httpStatus: 503 });
  });

  it("returns all items as failures when every one is invalid, reserving nothing", async () => {
    const result = await w.service.sendBatch(WS, [raw({ content: { from: "eve@evil.test" } }), raw({ to: "nobody" })]);
    expect(result.successful).toEqual([]);
    expect(result.failed.map((f) => f.index)).toEqual([0, 1]);
    expect(w.directory.count("reserveSendable")).toBe(0);
  });
});

describe("caller-chosen keys", () => {
  it("stores variables and contact properties whose keys are not valid field names", async () => {
    const w = await buildTestWorld();
    const record = await w.service.send("ws", {
      to: "ann@example.test",
      content: { kind: "raw", from: "team@acme.test", subject: "x", html: "<p>x</p>", contactProperties: { $gt: "", "a.b": 1 } },
      sendAt: new Date(w.clock.now().getTime() + 60_000),
    });
    w.clock.advance(60_000);
    expect(await w.scheduler().tick()).toBe(1);
    expect(w.queue.jobs[0]).toMatchObject({ emailId: record.id, variables: { $gt: "", "a.b": 1 } });
  });
});

describe("forwarding a received message (DESIGN §10.4)", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
  });
  const message = "DKIM-Signature: v=1; d=sender.example; b=x\r\nFrom: =?UTF-8?Q?Ann_L=C3=A9e?= <ann@sender.example>\r\nSubject: =?UTF-8?B?SMOpbGxv?= {{x}}\r\n\r\nbody\r\n";
  const forwarded = (over: Partial<EmailRequest> = {}, envelopeFrom = "SRS0=abcdef=aa=sender.example=ann@bounces.acme.test"): EmailRequest => ({
    to: "team@elsewhere.test",
    content: { kind: "forwarded", raw: new TextEncoder().encode(message), envelopeFrom, receivedId: "rcv_1" },
    ...over,
  });

  it("records a raw email from the message's own From and Subject, checks no sender, and hands delivery the bytes and the SRS sender", async () => {
    const record = await w.service.send(WS, forwarded());
    expect(record).toMatchObject({ status: "SENT", type: "raw", to: "team@elsewhere.test", from: "Ann Lée <ann@sender.example>", subject: "Héllo {{x}}" });
    expect(w.directory.count("checkSender")).toBe(0);
    expect(record.messageId).toMatch(/@bounces\.acme\.test$/);
    expect(w.directory.used).toBe(1);
    expect(w.renderer.inputs[0]).toMatchObject({ html: "", trackClicks: false, trackOpens: false, literal: true });
    expect(w.queue.jobs[0]).toMatchObject({ emailId: record.id, recipient: "team@elsewhere.test", fromEmail: "ann@sender.example" });
    const extras = w.content.extras.get(`${WS} email:${record.id}`)!;
    expect(extras.forwarded?.envelopeFrom).toBe("SRS0=abcdef=aa=sender.example=ann@bounces.acme.test");
    expect(new TextDecoder().decode(extras.forwarded!.raw)).toBe(message);
    // Nothing of the message shows as an attachment of the record.
    expect((await w.service.get(WS, record.id)).attachments).toBeUndefined();
  });

  it("writes the bytes to the content store again when the scheduler publishes it after a failed publish", async () => {
    w.queue.failNext = 1;
    const record = await w.service.send(WS, forwarded());
    w.content.extras.clear();
    w.clock.advance(6_000);
    expect(await w.scheduler("other-process").tick()).toBe(1);
    expect(new TextDecoder().decode(w.content.extras.get(`${WS} email:${record.id}`)!.forwarded!.raw)).toBe(message);
  });

  it("is sent once per received email and target, and refuses a bad envelope sender or an empty message", async () => {
    const first = await w.service.send(WS, forwarded({ idempotencyKey: "mailroom-forward:rcv_1:team@elsewhere.test" }));
    // A retry writes the trace header and the SRS day again: the same email.
    const again = await w.service.send(WS, forwarded({ idempotencyKey: "mailroom-forward:rcv_1:team@elsewhere.test" }, "SRS0=zzzzzz=ab=sender.example=ann@bounces.acme.test"));
    expect(again.id).toBe(first.id);
    expect(w.queue.jobs).toHaveLength(1);
    expect((await refusal(w.service.send(WS, forwarded({}, "not an address")))).code).toBe("invalid_request");
    expect((await refusal(w.service.send(WS, forwarded({}, "a@b.test\r\nBcc: x@y.test")))).code).toBe("header_injection");
    expect((await refusal(w.service.send(WS, { ...forwarded(), content: { kind: "forwarded", raw: new Uint8Array(0), envelopeFrom: "" } }))).code).toBe("invalid_payload");
  });

  it("forwards the null sender, and does not send to a suppressed target", async () => {
    expect((await w.service.send(WS, forwarded({}, ""))).status).toBe("SENT");
    w.directory.suppressions.set("gone@elsewhere.test", "hard bounce");
    const record = await w.service.send(WS, forwarded({ to: "gone@elsewhere.test" }));
    expect(record.status).toBe("FAILED");
    expect(w.queue.jobs).toHaveLength(1);
  });
});
