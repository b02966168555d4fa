import { describe, expect, it } from "vitest";
import { buildTestDelivery, compiledFrom, testJob, type TestDelivery } from "../testing.js";
import { parseVerpAddress } from "@mailroom/content/verp.js";
import { outcomeEventId } from "./outcome.js";
import { bodyText } from "../adapters/mime.js";

async function setup(opts: Parameters<typeof buildTestDelivery>[0] = {}): Promise<TestDelivery> {
  const t = await buildTestDelivery(opts);
  t.content.put("ws_test", "email:trs_content", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>" }));
  t.content.put("ws_test", "broadcast:cmp_1", compiledFrom({ subject: "News", html: "<p>News for {{firstName}}</p>", broadcast: true }));
  t.directory.allow("ws_test", "news@acme.test");
  return t;
}

describe("Deliverer", () => {
  it("sends a job once, merges the recipient's values and reports SENT", async () => {
    const t = await setup();
    const job = testJob({ variables: { firstName: "Zoë <b>" } });
    expect(await t.run(job)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(1);
    const mail = t.transport.sent[0];
    expect(mail.subject).toBe("Hi Zoë <b>");
    expect(bodyText(mail.html)).toBe("<p>Hello Zoë &lt;b&gt;</p>");
    expect(mail.messageId).toBe(`<${job.messageId}>`);
    // The envelope sender is the delivery's VERP return path on the sender's bounce subdomain.
    expect(mail.envelope.to).toBe(job.recipient.email);
    expect(parseVerpAddress("test-secret-test-secret", mail.envelope.from)).toEqual({ deliveryId: job.deliveryId, domain: "bounces.acme.test" });
    expect(t.events.events).toMatchObject([{ type: "sent", deliveryId: job.deliveryId, attempt: 1, smtpCode: 250, source: "transactional" }]);
    expect((await t.deliveries.get(job.deliveryId))?.state).toBe("sent");
  });

  it("sends a forwarded message verbatim from its SRS envelope sender: no merge, headers or signature of ours, no sender check", async () => {
    const t = await setup();
    const raw = new TextEncoder().encode("DKIM-Signature: v=1; d=sender.example; b=x\r\nFrom: Ann <ann@sender.example>\r\nSubject: {{firstName}}\r\n\r\nbody {{firstName}}\r\n");
    const envelopeFrom = "SRS0=abcdef=aa=sender.example=ann@bounces.acme.test";
    t.content.put("ws_test", "email:trs_fwd", Object.assign(compiledFrom({ subject: "{{firstName}}", html: "" }), { carried: { cc: [], headers: [], attachments: [], forwarded: { raw, envelopeFrom } } }));
    // The From (ann@sender.example) is no sender of this workspace: a forward is sent all the same.
    const job = testJob({ contentRef: "email:trs_fwd", fromEmail: "ann@sender.example", variables: { firstName: "Zoë" } });
    expect(await t.run(job)).toEqual({ kind: "ack" });
    const mail = t.transport.sent[0]!;
    expect(mail.envelope).toEqual({ from: envelopeFrom, to: job.recipient.email });
    expect(Buffer.from(mail.raw!).equals(Buffer.from(raw))).toBe(true);
    expect(mail.dkim).toBeUndefined();
    expect(mail.headers).toEqual([]);
    const { buildMime } = await import("../adapters/mime.js");
    expect(buildMime(mail).equals(Buffer.from(raw))).toBe(true);
    // A relay provider's route adds its correlation header in front, the message untouched behind it.
    const routed = buildMime({ ...mail, headers: [{ key: "X-SES-MESSAGE-TAGS", value: "mailroom-delivery-id=dlv_1" }] });
    expect(routed.equals(Buffer.concat([Buffer.from("X-SES-MESSAGE-TAGS: mailroom-delivery-id=dlv_1\r\n"), Buffer.from(raw)]))).toBe(true);
    expect(t.events.events).toMatchObject([{ type: "sent", deliveryId: job.deliveryId, source: "transactional" }]);
  });

  it("refuses content compiled for another workspace: nothing sent, FAILED", async () => {
    const t = await setup();
    t.content.put("ws_test", "broadcast:cmp_foreign", compiledFrom({ subject: "B's news", html: "<p>{{unsubscribeUrl}}</p>", broadcast: true, workspaceId: "ws_b" }));
    const job = testJob({ source: "broadcast", broadcastId: "cmp_foreign", contentRef: "broadcast:cmp_foreign" });
    expect(await t.run(job)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(0);
    expect(t.events.events).toMatchObject([{ type: "failed", detail: expect.stringMatching(/does not belong to workspace ws_test/) }]);
  });

  it("retries a 4xx with exponential backoff and sends on the next delivery", async () => {
    const t = await setup();
    t.transport.script = [{ kind: "reject", code: 451 }, { kind: "drop" }];
    const job = testJob();
    expect(await t.run(job, 1)).toEqual({ kind: "retry", delayMs: 1_000 });
    expect(await t.run(job, 2)).toEqual({ kind: "retry", delayMs: 2_000 });
    expect(await t.run(job, 3)).toEqual({ kind: "ack" });
    expect(t.events.types()).toEqual(["deferred", "deferred", "sent"]);
    expect(t.events.events.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(t.events.events[0].smtpCode).toBe(451);
    expect(t.transport.sent).toHaveLength(1);
  });

  it("names the route that carried or last tried the message on its events and route metrics", async () => {
    const seen: Array<[string, string, string]> = [];
    const t = await setup({
      metrics: {
        outcome() {},
        sendStarted: () => () => {},
        routeOutcome: (route, domain, outcome) => void seen.push([route, domain, outcome]),
      },
    });
    t.transport.route = "backup";
    t.transport.script = [{ kind: "reject", code: 451 }];
    const job = testJob({ recipient: { email: "Ann@Example.TEST", contactId: "ctc_1", variables: {} } });
    await t.run(job, 1);
    await t.run(job, 2);
    expect(t.events.events.map((e) => [e.type, e.route])).toEqual([["deferred", "backup"], ["sent", "backup"]]);
    expect(seen).toEqual([["backup", "example.test", "deferred"], ["backup", "example.test", "sent"]]);
  });

  it("gives up as FAILED after the attempt limit", async () => {
    const t = await setup({ maxAttempts: 2 });
    t.transport.script = [{ kind: "reject", code: 421 }, { kind: "reject", code: 421 }];
    const job = testJob();
    expect((await t.run(job, 1)).kind).toBe("retry");
    expect(await t.run(job, 2)).toEqual({ kind: "ack" });
    expect(t.events.types()).toEqual(["deferred", "failed"]);
    expect(t.events.events[1].detail).toMatch(/gave up after 2 attempts/);
    expect((await t.deliveries.get(job.deliveryId))?.state).toBe("failed");
  });

  it("turns a 5xx for the recipient into a permanent BOUNCED event, the one path to its suppression", async () => {
    const t = await setup();
    t.transport.script = [{ kind: "reject", code: 550 }];
    const job = testJob();
    expect(await t.run(job)).toEqual({ kind: "ack" });
    // A hard bounce: readers record `bounceType: "hard"` and count it as hardBounced from this flag;
    // the audience unit's consumer of the event suppresses the address (delivery does not call it).
    expect(t.events.events).toMatchObject([{ type: "bounced", smtpCode: 550, permanent: true, recipient: job.recipient.email, detail: "550 rejected" }]);
    expect(t.directory.suppressed).toEqual([]);
  });

  it("does not bounce the recipient for a 5xx about the relay (auth, MAIL FROM)", async () => {
    const t = await setup();
    t.transport.script = [{ kind: "reject", code: 535, aboutRecipient: false }];
    expect((await t.run(testJob())).kind).toBe("retry");
    expect(t.directory.suppressed).toEqual([]);
    expect(t.events.types()).toEqual(["deferred"]);
    expect(t.events.events[0].permanent).toBeUndefined();
  });

  it("bounces without the audience unit: a redelivery after a failed publish sends the BOUNCED event, never the mail again", async () => {
    const t = await setup();
    t.transport.script = [{ kind: "reject", code: 550 }];
    t.directory.failSuppression = true;
    t.events.failNext = 1;
    const job = testJob();
    await expect(t.run(job, 1)).rejects.toThrow(/publish timed out/);
    expect(await t.run(job, 2)).toEqual({ kind: "ack" });
    expect(t.transport.attempts).toHaveLength(1);
    expect(t.directory.suppressed).toEqual([]);
    expect(t.events.types()).toEqual(["bounced"]);
  });

  it("acks a redelivered job for a sent delivery without sending again, republishing the same event id", async () => {
    const t = await setup();
    const job = testJob();
    await t.run(job, 1);
    expect(await t.run(job, 2)).toEqual({ kind: "ack" });
    expect(await t.run(job, 1)).toEqual({ kind: "ack" }); // a second copy of the job (other msgID)
    expect(t.transport.attempts).toHaveLength(1);
    const ids = t.events.events.map((e) => outcomeEventId(e.deliveryId, e.type, e.attempt));
    expect(new Set(ids).size).toBe(1);
  });

  it("finishes the bookkeeping, without a second send, when publishing the outcome failed", async () => {
    const t = await setup();
    const job = testJob();
    t.events.failNext = 1;
    await expect(t.run(job, 1)).rejects.toThrow(/publish timed out/);
    expect(await t.run(job, 2)).toEqual({ kind: "ack" });
    expect(t.transport.attempts).toHaveLength(1);
    expect(t.events.types()).toEqual(["sent"]);
  });

  it("leaves a delivery claimed by a live worker alone, and takes over a stale claim", async () => {
    let now = Date.now();
    const t = await setup({ now: () => now, claimTtlMs: 30_000 });
    const job = testJob();
    const other = await t.deliveries.claim(job.deliveryId, "ws_test", "worker-b", new Date(now - 10_000), new Date(0));
    expect(other.claimed).toBe(true);
    const d = await t.run(job, 2);
    expect(d.kind).toBe("retry");
    expect(d.kind === "retry" && d.delayMs).toBe(20_250);
    expect(t.transport.attempts).toHaveLength(0);
    now += 25_000; // worker-b died: its claim is now older than the ack wait
    expect(await t.run(job, 3)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(1);
    expect((await t.deliveries.get(job.deliveryId))?.attempts).toBe(2);
  });

  it("holds paused broadcasts and sends them after resume; tests and transactional mail are not paused", async () => {
    const t = await setup();
    await t.pacing.setPaused("cmp_1", true);
    const job = testJob({ source: "broadcast", broadcastId: "cmp_1", contentRef: "broadcast:cmp_1" });
    expect(await t.run(job)).toEqual({ kind: "retry", delayMs: 5_000 });
    expect(await t.run(testJob({ source: "test", broadcastId: "cmp_1", contentRef: "broadcast:cmp_1" }))).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(1);
    await t.pacing.setPaused("cmp_1", false);
    expect(await t.run(job, 2)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(2);
  });

  it("fails a job whose content no longer exists, and retries one whose content owner is down", async () => {
    const t = await setup();
    expect(await t.run(testJob({ contentRef: "email:trs_gone" }))).toEqual({ kind: "ack" });
    expect(t.events.events[0]).toMatchObject({ type: "failed", attempt: 0 });
    expect(t.events.events[0].detail).toMatch(/not found/);
    t.content.unavailable = true;
    const job = testJob();
    expect((await t.run(job)).kind).toBe("retry");
    expect(await t.deliveries.get(job.deliveryId)).toBeNull();
    expect(t.transport.attempts).toHaveLength(0);
  });

  it("refuses to send as a sender the workspace may not use", async () => {
    const t = await setup();
    expect(await t.run(testJob({ fromEmail: "ceo@other-tenant.test" }))).toEqual({ kind: "ack" });
    expect(t.events.events[0]).toMatchObject({ type: "failed", detail: "sender not allowed for this workspace" });
    expect(t.transport.attempts).toHaveLength(0);
  });

  it("drops a job with header injection in its fields and reports it FAILED", async () => {
    const t = await setup();
    const d = await t.run(testJob({ fromName: "Acme\r\nBcc: victim@example.test" }));
    expect(d).toEqual({ kind: "drop", reason: "from_name contains control characters" });
    expect(t.events.events[0]).toMatchObject({ type: "failed" });
    expect(t.transport.attempts).toHaveLength(0);
  });

  it("paces a workspace to its rate: waits in process briefly, hands longer waits back to the queue", async () => {
    let now = Date.now();
    const t = await setup({ now: () => now, maxInlineWaitMs: 0 });
    await t.pacing.setWorkspaceRate("ws_test", 2);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await t.run(testJob()));
    expect(results.map((r) => r.kind)).toEqual(["ack", "ack", "retry", "retry"]);
    expect(results[2].kind === "retry" && results[2].delayMs).toBe(500);
    now += 500;
    expect((await t.run(testJob())).kind).toBe("ack");
    expect(t.transport.sent).toHaveLength(3);
  });

  it("keeps its claim fresh while a slow SMTP transaction runs: a redelivered job elsewhere does not send it again", async () => {
    const t = await setup({ claimTtlMs: 300 });
    t.transport.delayMs = 900; // three ack waits inside the relay
    const job = testJob();
    const sending = t.deliverer.handle(job, { deliveryCount: 1, working: () => undefined });
    await new Promise((r) => setTimeout(r, 700));
    // The job came back to another process (its ack was lost): the claim is still this worker's.
    const taken = await t.deliveries.claim(job.deliveryId, "ws_test", "worker-b", new Date(), new Date(Date.now() - 300));
    expect(taken.claimed).toBe(false);
    expect(await sending).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(1);
    expect((await t.deliveries.get(job.deliveryId))?.state).toBe("sent");
  });

  it("tells the queue a slow SMTP transaction is still being worked on", async () => {
    const t = await setup({ claimTtlMs: 300 });
    t.transport.delayMs = 450;
    let beats = 0;
    expect(await t.deliverer.handle(testJob(), { deliveryCount: 1, working: () => (beats += 1) })).toEqual({ kind: "ack" });
    expect(beats).toBeGreaterThanOrEqual(2);
    const after = beats;
    await new Promise((r) => setTimeout(r, 250));
    expect(beats).toBe(after); // no heartbeats once the send is over
  });
});
