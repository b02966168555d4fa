import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { DeliveryJobSchema, DeliveryPageSchema, DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import { deliveryPageSubject, isPageSubject } from "@mailroom/pipeline/delivery-jobs.js";
import { variablesJson } from "@mailroom/pipeline/work.js";
import { deliveryJobSubject } from "@mailroom/pipeline/subjects.js";
import { bodyText } from "../adapters/mime.js";
import { toJob, toPage } from "../consumers.js";
import { buildTestDelivery, compiledFrom, testJob, testPage, type TestDelivery } from "../testing.js";
import { outcomeEventId } from "./outcome.js";
import { SmtpFailure, type OutgoingMail } from "./ports.js";

async function setup(opts: Parameters<typeof buildTestDelivery>[0] = {}): Promise<TestDelivery> {
  const t = await buildTestDelivery(opts);
  t.content.put("ws_test", "broadcast:cmp_page", compiledFrom({ subject: "News for {{firstName}}", html: "<p>Hi {{firstName}}</p>", broadcast: true }));
  t.content.put("ws_test", "email:trs_content", compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>" }));
  t.directory.allow("ws_test", "news@acme.test");
  return t;
}

/** Rejects the recipients in `deferred` with a 451 once each; counts sends at once. */
function scriptByRecipient(t: TestDelivery, deferred: Set<string>, delayMs = 0) {
  const original = t.transport.send.bind(t.transport);
  const stats = { now: 0, max: 0 };
  t.transport.send = async (mail: OutgoingMail) => {
    stats.now += 1;
    stats.max = Math.max(stats.max, stats.now);
    try {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      if (deferred.delete(mail.envelope.to)) {
        t.transport.attempts.push(mail);
        throw new SmtpFailure("451 greylisted", 451, true);
      }
      return await original(mail);
    } finally {
      stats.now -= 1;
    }
  };
  return stats;
}

describe("Deliverer: page jobs", () => {
  it("sends every recipient of a page, a few at once, with its own merge values, on one skeleton", async () => {
    const t = await setup({ pageConcurrency: 4 });
    const stats = scriptByRecipient(t, new Set(), 5);
    const page = testPage(25);
    expect(await t.runPage(page)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(25);
    expect(stats.max).toBe(4);
    const byTo = new Map(t.transport.sent.map((m) => [m.envelope.to, m]));
    expect(byTo.get(page.jobs[7].recipient.email)?.subject).toBe("News for R7");
    expect(bodyText(byTo.get(page.jobs[3].recipient.email)!.html)).toBe("<p>Hi R3</p>");
    expect(new Set(t.transport.sent.map((m) => m.skeleton)).size).toBe(1);
    expect(t.events.events.filter((e) => e.type === "sent")).toHaveLength(25);
    expect(t.events.events.every((e) => e.source === "broadcast" && e.broadcastId === "cmp_page")).toBe(true);
    // Content and sender were loaded once for the page.
    expect(t.content.calls).toBe(1);
    for (const j of page.jobs) expect((await t.deliveries.get(j.deliveryId))?.state).toBe("sent");
  });

  it("hands a deferred recipient on as a job of its own, not before its retry delay, and acks the page", async () => {
    let now = Date.now(); // (the ledger expires records by their dates)
    const t = await setup({ now: () => now });
    const page = testPage(5);
    const deferredTo = page.jobs[2].recipient.email;
    scriptByRecipient(t, new Set([deferredTo]));
    expect(await t.runPage(page)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(4);
    expect(t.retries.handedOn).toHaveLength(1);
    const [{ job, notBefore }] = t.retries.handedOn;
    expect(job).toMatchObject({ deliveryId: page.jobs[2].deliveryId, messageId: page.jobs[2].messageId, source: "broadcast", recipient: page.jobs[2].recipient });
    expect(notBefore).toBe(now + 1_000); // retryBaseMs after attempt 1
    expect(t.events.events.filter((e) => e.deliveryId === job.deliveryId).map((e) => e.type)).toEqual(["deferred"]);

    // The job handed on: early, it goes back to the queue for the rest of the delay; then it is sent (attempt 2).
    now += 400;
    expect(await t.run({ ...job, notBefore }, 1)).toEqual({ kind: "retry", delayMs: 600 });
    expect(t.transport.sent).toHaveLength(4);
    now += 600;
    expect(await t.run({ ...job, notBefore }, 1)).toEqual({ kind: "ack" });
    expect(t.transport.sent.map((m) => m.envelope.to)).toContain(deferredTo);
    expect(t.events.events.filter((e) => e.deliveryId === job.deliveryId).map((e) => [e.type, e.attempt])).toEqual([["deferred", 1], ["sent", 2]]);
  });

  it("puts a paused broadcast's page back whole, nothing sent", async () => {
    const t = await setup();
    await t.pacing.setPaused("cmp_page", true);
    expect(await t.runPage(testPage(10))).toEqual({ kind: "retry", delayMs: 5_000 });
    expect(t.transport.attempts).toHaveLength(0);
    expect(t.events.events).toHaveLength(0);
  });

  it("redelivered, sends only to recipients not yet final, hands deferred ones on again, and republishes the finals' events with the same ids", async () => {
    const t = await setup();
    const page = testPage(12);
    // The first delivery got through 6 recipients (one deferred) before its worker died.
    scriptByRecipient(t, new Set([page.jobs[1].recipient.email]));
    expect(await t.runPage({ ...page, jobs: page.jobs.slice(0, 6) })).toEqual({ kind: "ack" });
    const firstEvents = t.events.events.length;
    expect(t.transport.sent).toHaveLength(5);

    expect(await t.runPage(page, 2)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(11); // 5 + the 6 never tried
    expect(new Set(t.transport.sent.map((m) => m.envelope.to)).size).toBe(11);
    expect(t.transport.sent.map((m) => m.envelope.to)).not.toContain(page.jobs[1].recipient.email);
    expect(t.retries.handedOn.map((h) => h.job.deliveryId)).toEqual([page.jobs[1].deliveryId, page.jobs[1].deliveryId]);
    const again = t.events.events.slice(firstEvents).filter((e) => e.deliveryId === page.jobs[0].deliveryId);
    expect(again.map((e) => outcomeEventId(e.deliveryId, e.type, e.attempt))).toEqual([outcomeEventId(page.jobs[0].deliveryId, "sent", 1)]);
  });

  it("fails every recipient for good when the content is not in the store", async () => {
    const t = await setup();
    const page = testPage(3, { contentRef: "broadcast:cmp_missing" });
    expect(await t.runPage(page)).toEqual({ kind: "ack" });
    expect(t.transport.attempts).toHaveLength(0);
    expect(t.events.types()).toEqual(["failed", "failed", "failed"]);
    expect(t.events.events[0].detail).toMatch(/not found/);
  });

  it("fails the page (redelivered later) when an outcome cannot be published, without sending twice", async () => {
    const t = await setup();
    const page = testPage(4);
    t.events.failNext = 1;
    await expect(t.runPage(page)).rejects.toThrow(/publish timed out/);
    expect(await t.runPage(page, 2)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(4);
    expect(new Set(t.events.events.map((e) => e.deliveryId)).size).toBe(4);
  });

  it("heartbeats a page for its whole handling", async () => {
    const t = await setup({ claimTtlMs: 300, pageConcurrency: 1 });
    scriptByRecipient(t, new Set(), 60);
    const beats = { count: 0 };
    expect(await t.runPage(testPage(5), 1, beats)).toEqual({ kind: "ack" });
    expect(beats.count).toBeGreaterThanOrEqual(2);
  });

  it("sends an invalid recipient nowhere and still acks the page with the others sent", async () => {
    const t = await setup();
    const page = testPage(3);
    page.jobs[1] = { ...page.jobs[1], recipient: { ...page.jobs[1].recipient, email: "not an address" } };
    expect(await t.runPage(page)).toEqual({ kind: "ack" });
    expect(t.transport.sent).toHaveLength(2);
    expect(t.events.types().sort()).toEqual(["failed", "sent", "sent"]);
  });
});

describe("decoding jobs and pages", () => {
  it("tells a page job from a single job by its subject", () => {
    expect(isPageSubject(deliveryPageSubject("cmp_1"))).toBe(true);
    expect(isPageSubject(deliveryJobSubject("broadcast", "cmp_1"))).toBe(false);
    expect(isPageSubject(deliveryJobSubject("broadcast", "page"))).toBe(false); // a broadcast called "page"
    expect(isPageSubject(deliveryJobSubject("transactional"))).toBe(false);
  });

  it("reads variables_json, and the Struct of jobs from older publishers", () => {
    const base = { deliveryId: "dlv_1", workspaceId: "ws_a", source: DeliverySource.TRANSACTIONAL, messageId: "m@x", contentRef: "email:trs_1" };
    const json = toJob(create(DeliveryJobSchema, { ...base, recipient: { email: "a@x.test", variablesJson: variablesJson({ firstName: "Zoë" }) } }));
    expect(json?.recipient.variables).toEqual({ firstName: "Zoë" });
    const struct = toJob(create(DeliveryJobSchema, { ...base, recipient: { email: "a@x.test", variables: { firstName: "Old" } } }));
    expect(struct?.recipient.variables).toEqual({ firstName: "Old" });
    const none = toJob(create(DeliveryJobSchema, { ...base, recipient: { email: "a@x.test" }, notBefore: timestampFromMs(123_000) }));
    expect(none?.recipient.variables).toEqual({});
    expect(none?.notBefore).toBe(123_000);
  });

  it("turns a page into one job per recipient sharing the page's fields", () => {
    const page = toPage(create(DeliveryPageSchema, {
      pageId: "pg_1", workspaceId: "ws_a", source: DeliverySource.BROADCAST, broadcastId: "cmp_1", contentRef: "broadcast:cmp_1",
      fromEmail: "news@a.test", fromName: "A", replyToList: ["r@a.test"], subjectPrefix: "",
      recipients: [
        { deliveryId: "dlv_a", messageId: "a@a.test", email: "a@x.test", contactId: "ctc_a", variablesJson: variablesJson({ n: 1 }) },
        { deliveryId: "dlv_b", messageId: "b@a.test", email: "b@x.test", contactId: "ctc_b", variablesJson: new TextEncoder().encode("{broken") },
      ],
    }));
    expect(page?.jobs).toHaveLength(2);
    expect(page?.jobs[0]).toMatchObject({
      deliveryId: "dlv_a", messageId: "a@a.test", source: "broadcast", broadcastId: "cmp_1", contentRef: "broadcast:cmp_1",
      fromEmail: "news@a.test", replyTo: "r@a.test", recipient: { email: "a@x.test", contactId: "ctc_a", variables: { n: 1 } },
    });
    expect(page?.jobs[1].recipient.variables).toEqual({});
    expect(testJob()).toBeDefined();
  });
});
