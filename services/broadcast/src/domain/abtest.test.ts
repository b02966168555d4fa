import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { assignVariants, pickWinner, ratesOf, validateAbTest } from "./abtest.js";
import { buildTestWorld, draft, FakeDirectory, ManualClock, type TestWorld } from "../testing.js";
import { deliveryIdOf, type AbTestConfig } from "./model.js";
import type { AppError } from "@mailroom/kit/errors.js";
import { AB_CANCELLED } from "./broadcasts.js";
import { wavesOfPart } from "./sending.js";

const WS = "ws_acme";
const base = { subject: "Hello", fromName: "Acme", previewText: "", html: "<p>Hi</p>" };
const ok = { variants: [{ subject: "A" }, { subject: "B" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600 };

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error("not refused");
}

describe("validateAbTest", () => {
  it("accepts 2–4 variants that differ, a share in 0.05–0.5, opens or clicks, a wait in range", () => {
    expect(validateAbTest(ok, base)).toEqual({ variants: [{ subject: "A" }, { subject: "B" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600 });
    expect(validateAbTest({ ...ok, variants: [{ html: "<p>x</p>" }, { fromName: "Bob" }, { previewText: "p" }, { subject: "D" }], metric: "clicks" }, base).variants).toHaveLength(4);
  });

  it.each([
    [{ ...ok, variants: [{ subject: "A" }] }, "abTest.variants"],
    [{ ...ok, variants: Array.from({ length: 5 }, (_, i) => ({ subject: `S${i}` })) }, "abTest.variants"],
    [{ ...ok, variants: [{ subject: "A" }, { subject: "Hello" }] }, "abTest.variants[1]"],
    [{ ...ok, variants: [{ subject: "A" }, {}] }, "abTest.variants[1]"],
    [{ ...ok, variants: [{ subject: "A" }, { html: " " }] }, "abTest.variants[1].html"],
    [{ ...ok, testShare: 0.04 }, "abTest.testShare"],
    [{ ...ok, testShare: 0.51 }, "abTest.testShare"],
    [{ ...ok, testShare: undefined }, "abTest.testShare"],
    [{ ...ok, metric: "replies" }, "abTest.metric"],
    [{ ...ok, waitForSeconds: 299 }, "abTest.waitFor"],
    [{ ...ok, waitForSeconds: 7 * 24 * 3600 + 1 }, "abTest.waitFor"],
    [{ ...ok, waitForSeconds: 600.5 }, "abTest.waitFor"],
  ])("refuses %j naming %s", (input, field) => {
    const err = refusal(() => validateAbTest(input, base));
    expect(err.code).toBe("invalid_payload");
    expect(err.httpStatus).toBe(400);
    expect(err.message.startsWith(field)).toBe(true);
  });

  it("refuses a line break in a variant's subject as header_injection; a lower minimum wait applies when given", () => {
    expect(refusal(() => validateAbTest({ ...ok, variants: [{ subject: "A\r\nBcc: x" }, { subject: "B" }] }, base)).code).toBe("header_injection");
    expect(validateAbTest({ ...ok, waitForSeconds: 5 }, base, 5).waitForSeconds).toBe(5);
  });
});

describe("assignVariants", () => {
  const idsOf = (n: number) => Array.from({ length: n }, (_, i) => `ctc_${String(i).padStart(26, "0")}`);
  /** The whole audience in pages of `size` (the last one shorter), as resolution writes them. */
  function split(seed: string, ids: string[], share: number, variants: number, size = 1_000) {
    const out: Array<number | undefined> = [];
    for (let at = 0; at < ids.length; at += size) out.push(...assignVariants(seed, ids.slice(at, at + size), at, share, variants));
    return out;
  }
  const sizes = (assigned: Array<number | undefined>, variants: number) =>
    Array.from({ length: variants }, (_, v) => assigned.filter((a) => a === v).length);

  it.each([
    [20, 0.3, 2, [3, 3]],
    [36, 0.3, 2, [6, 5]],
    [10_000, 0.3, 2, [1_500, 1_500]],
    [10_000, 0.2, 3, [667, 667, 666]],
    [10_000, 0.05, 4, [125, 125, 125, 125]],
    [36, 0.5, 4, [5, 5, 4, 4]],
  ])("%i contacts at %f: exactly round(N × share) in the test, variants %j, for every broadcast", (n, share, variants, expected) => {
    const ids = idsOf(n);
    for (let b = 0; b < 20; b++) {
      const assigned = split(`cmp_${n}_${b}`, ids, share, variants);
      expect(sizes(assigned, variants)).toEqual(expected);
      expect(assigned.filter((a) => a !== undefined)).toHaveLength(Math.round(n * share));
    }
  });

  it("is exact however the audience falls into pages (suppressions make pages of any size)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 40 }), fc.double({ min: 0.05, max: 0.5, noNaN: true }), fc.integer({ min: 2, max: 4 }), (pageSizes, share, variants) => {
        const ids = idsOf(pageSizes.reduce((a, b) => a + b, 0));
        const assigned: Array<number | undefined> = [];
        for (const size of pageSizes) assigned.push(...assignVariants("cmp_pages", ids.slice(assigned.length, assigned.length + size), assigned.length, share, variants));
        const counts = sizes(assigned, variants);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(Math.round(ids.length * share));
        expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("is the same for the same broadcast and order (a page written again after a restart), another for another broadcast", () => {
    const ids = idsOf(10_000);
    expect(split("cmp_1", ids, 0.3, 3)).toEqual(split("cmp_1", ids, 0.3, 3));
    const a = split("cmp_1", ids, 0.5, 2);
    const b = split("cmp_2", ids, 0.5, 2);
    expect(a.filter((v, i) => v === b[i]).length).toBeLessThan(ids.length * 0.5);
  });

  it("draws the test at random within each page: not every k-th contact, and spread over the whole audience", () => {
    const ids = idsOf(10_000);
    const assigned = split("cmp_spread", ids, 0.3, 2);
    const tested = assigned.flatMap((a, i) => (a === undefined ? [] : [i]));
    // Every page of 1,000 holds its 300, and the gaps between test contacts vary.
    for (let page = 0; page < 10; page++) expect(tested.filter((i) => Math.floor(i / 1_000) === page)).toHaveLength(300);
    const gaps = new Set(tested.slice(1).map((i, k) => i - tested[k]));
    expect(gaps.size).toBeGreaterThan(5);
    // Not the pages' first contacts (that would be all 3,000; at random about 900), nor one variant before the other.
    expect(tested.filter((i) => i % 1_000 < 300).length).toBeLessThan(1_200);
    const firstHalf = assigned.slice(0, 5_000);
    expect(Math.abs(firstHalf.filter((a) => a === 0).length - firstHalf.filter((a) => a === 1).length)).toBeLessThanOrEqual(1);
  });
});

describe("pickWinner", () => {
  const c = (delivered: number, uniqueOpens: number, uniqueClicks: number) => ({ recipients: delivered, delivered, uniqueOpens, uniqueClicks });

  it("picks the best unique rate for the metric; ties and no data: the first", () => {
    const stats = { v0: c(100, 30, 1), v1: c(50, 20, 2), v2: c(10, 1, 5) };
    expect(pickWinner(stats, 3, "opens")).toBe(1);
    expect(pickWinner(stats, 3, "clicks")).toBe(2);
    expect(pickWinner({ v0: c(10, 5, 0), v1: c(20, 10, 0) }, 2, "opens")).toBe(0);
    expect(pickWinner({}, 3, "clicks")).toBe(0);
    expect(ratesOf(c(0, 0, 0))).toEqual({ openRate: 0, clickRate: 0 });
  });
});

describe("wavesOfPart", () => {
  it("keeps the test share's PROGRESSIVE bounce waves apart from the rest's", () => {
    const waves = { w0: 5, w1: 2, w1000: 3, w1002: 1 };
    expect(wavesOfPart(waves, false)).toEqual({ w0: 5, w1: 2 });
    expect(wavesOfPart(waves, true)).toEqual({ w0: 3, w2: 1 });
  });
});

// ---- the broadcast with an A/B test, in memory ---------------------------------------------

async function run(w: TestWorld, sender = w.sender()) {
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

const abTest = (over: Partial<AbTestConfig> = {}) => ({
  variants: [{ subject: "Variant A {{firstName}}" }, { subject: "Variant B", fromName: "Bee" }],
  testShare: 0.2,
  metric: "opens",
  waitForSeconds: 3600,
  ...over,
});

async function startAb(contacts = 2_000, method = "ASAP") {
  const w = await buildTestWorld();
  w.directory.addContacts(contacts);
  const { broadcast } = await w.service.create(WS, draft({ abTest: abTest() }));
  expect(broadcast.abTest).toMatchObject({ state: "draft", testShare: 0.2, stats: { v0: { recipients: 0 }, v1: { recipients: 0 } } });
  await w.service.schedule(WS, broadcast.id, { deliveryMethod: method });
  await run(w);
  return { w, id: broadcast.id };
}

const variantOf = (ref: string) => Number(ref.slice(ref.lastIndexOf("-v") + 2));

describe("a broadcast with an A/B test", () => {
  it("sends the variants to disjoint parts of the test share, waits, then the best open rate goes to the rest", async () => {
    const { w, id } = await startAb();
    const test = w.queue.jobs;
    const byVariant = [test.filter((j) => j.contentRef === `broadcast:${id}-v0`), test.filter((j) => j.contentRef === `broadcast:${id}-v1`)];
    expect(byVariant[0].length + byVariant[1].length).toBe(test.length);
    // Exactly round(2,000 × 0.2), split evenly (DESIGN §10.5).
    expect(byVariant.map((v) => v.length)).toEqual([200, 200]);
    expect(new Set(test.map((j) => j.deliveryId)).size).toBe(test.length);
    expect(byVariant[1].every((j) => j.fromName === "Bee")).toBe(true);
    expect(byVariant[0].every((j) => j.fromName === "Acme")).toBe(true);
    let b = await w.service.get(WS, id);
    expect(b.sending?.phase).toBe("waiting");
    expect(b.abTest).toMatchObject({ state: "waiting", seed: id, testReleased: test.length });
    expect(b.abTest!.stats.v0.recipients + b.abTest!.stats.v1.recipients).toBe(test.length);
    expect(b.progress.recipients).toBe(2_000);
    // Both variants compiled at schedule, each in the content store before its pages.
    expect(w.renderer.compiled.map((c) => c.subject)).toEqual(expect.arrayContaining(["Variant A {{firstName}}", "Variant B"]));
    expect(w.log.findIndex((l) => l.includes(`-v1`) && l.startsWith("put"))).toBeLessThan(w.log.findIndex((l) => l.startsWith("page")));

    await w.settleAll(id, "sent");
    // Variant B opens more (3 of its messages against 1 of A's).
    for (const j of byVariant[1].slice(0, 3)) await w.event({ kind: "opened", broadcastId: id, contactId: j.recipient.contactId, messageId: j.messageId });
    await w.event({ kind: "opened", broadcastId: id, contactId: byVariant[0][0].recipient.contactId, messageId: byVariant[0][0].messageId });
    await w.event({ kind: "opened", broadcastId: id, contactId: byVariant[0][0].recipient.contactId, messageId: byVariant[0][0].messageId });
    b = await w.service.get(WS, id);
    expect(b.abTest!.stats.v0).toMatchObject({ delivered: byVariant[0].length, uniqueOpens: 1 });
    expect(b.abTest!.stats.v1).toMatchObject({ delivered: byVariant[1].length, uniqueOpens: 3 });

    w.clock.advance(3_599_000);
    await run(w);
    expect(w.queue.jobs).toHaveLength(test.length);
    w.clock.advance(1_000);
    await run(w);
    b = await w.service.get(WS, id);
    expect(b.abTest).toMatchObject({ state: "decided", winner: 1, winnerChosenBy: "metric" });
    const rest = w.queue.jobs.slice(test.length);
    expect(rest.length).toBe(2_000 - test.length);
    expect(rest.every((j) => j.contentRef === `broadcast:${id}-v1` && j.fromName === "Bee")).toBe(true);
    expect(w.queue.distinct().size).toBe(2_000);

    await w.settleAll(id, "sent");
    b = await w.service.get(WS, id);
    expect(b.status).toBe("COMPLETED");
    // The variants' counts are the test share's.
    expect(b.abTest!.stats.v1).toMatchObject({ recipients: byVariant[1].length, delivered: byVariant[1].length, uniqueOpens: 3 });
    const completed = w.events.published.find((e) => e.type === "completed")!.broadcast;
    expect(completed.abTest).toMatchObject({ winner: 1, winnerChosenBy: "metric" });
    expect(w.log.filter((l) => l.startsWith("delete") && l.includes(`-v`)).length).toBe(2);
  });

  it("a user's choice during the wait overrides the metric and goes at once; a second choice is 409", async () => {
    const { w, id } = await startAb(1_000);
    const tested = w.queue.jobs.length;
    await expect(w.service.chooseWinner(WS, id, 2)).rejects.toMatchObject({ code: "invalid_payload" });
    const b = await w.service.chooseWinner(WS, id, 0);
    expect(b.abTest).toMatchObject({ winner: 0, winnerChosenBy: "user", state: "decided" });
    await expect(w.service.chooseWinner(WS, id, 1)).rejects.toMatchObject({ code: "ab_winner_already_chosen", httpStatus: 409 });
    await run(w);
    const rest = w.queue.jobs.slice(tested);
    expect(rest.length).toBe(1_000 - tested);
    expect(rest.every((j) => j.contentRef === `broadcast:${id}-v0`)).toBe(true);
  });

  it("cannot choose before the wait; a cancel during the wait stops the rest and completes on the test share", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(500);
    const { broadcast } = await w.service.create(WS, draft({ abTest: abTest() }));
    await expect(w.service.chooseWinner(WS, broadcast.id, 0)).rejects.toMatchObject({ code: "ab_test_not_waiting" });
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    await run(w);
    const tested = w.queue.jobs.length;
    const cancelled = await w.service.cancel(WS, broadcast.id);
    expect(cancelled.abTest?.state).toBe("cancelled");
    expect(cancelled.sending?.pauseReason).toBe(AB_CANCELLED);
    w.clock.advance(3_600_000);
    await run(w);
    expect(w.queue.jobs).toHaveLength(tested);
    await w.settleAll(broadcast.id, "sent");
    await run(w);
    const b = await w.service.get(WS, broadcast.id);
    expect(b.status).toBe("COMPLETED");
    expect(b.progress.released).toBe(tested);
    await expect(w.service.cancel(WS, broadcast.id)).rejects.toMatchObject({ code: "broadcast_not_cancellable" });
  });

  it("another process after a restart keeps the split and sends the rest once", async () => {
    const { w, id } = await startAb(1_500);
    const before = await w.service.get(WS, id);
    const tested = w.queue.jobs.map((j) => j.deliveryId);
    w.clock.advance(3_600_000);
    // A second process decides and releases; a third finds nothing left to do.
    await run(w, w.sender("process-2"));
    await run(w, w.sender("process-3"));
    expect(w.queue.distinct().size).toBe(1_500);
    expect(w.queue.jobs.length).toBe(1_500);
    const after = await w.service.get(WS, id);
    expect(after.abTest!.seed).toBe(before.abTest!.seed);
    expect(w.queue.jobs.slice(0, tested.length).map((j) => j.deliveryId)).toEqual(tested);
    expect(deliveryIdOf(id, "x")).toBe(`${id}.x`);
  });

  it("a process that dies while resolving: the next one carries the split on, exact and as one process would have made it", async () => {
    const clock = new ManualClock();
    const directory = new FakeDirectory();
    directory.addContacts(3_500);
    // Suppressed contacts make pages of fewer recipients than contacts.
    for (const i of [3, 1_500, 1_501, 2_900]) directory.suppressions.add(`c${i}@example.test`);
    const w = await buildTestWorld({ clock, directory, sender: { pagesPerClaim: 1 } });
    const { broadcast } = await w.service.create(WS, draft({ abTest: abTest({ testShare: 0.3 }) }));
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    directory.streamFailsAt = 2_200; // dies while resolving the third page
    for (let i = 0; i < 5; i++) await w.sender("first").tick();
    expect((await w.service.get(WS, broadcast.id)).sending).toMatchObject({ phase: "resolving", pages: 2, resolved: 1_997 });
    directory.streamFailsAt = undefined;
    clock.advance(2 * 60_000); // the dead process's lease ran out
    await run(w, w.sender("restarted"));

    const tested = new Map(w.queue.jobs.map((j) => [j.recipient.contactId, variantOf(j.contentRef)]));
    // round(3,496 × 0.3) = 1,049: 525 and 524.
    expect([...tested.values()].filter((v) => v === 0)).toHaveLength(525);
    expect([...tested.values()].filter((v) => v === 1)).toHaveLength(524);
    // The pages as resolution writes them (1,000 contacts, minus the suppressed), split in one go.
    const expected = new Map<string, number>();
    let before = 0;
    for (let at = 0; at < 3_500; at += 1_000) {
      const page = directory.contacts.slice(at, at + 1_000).filter((c) => !directory.suppressions.has(c.email)).map((c) => c.id);
      assignVariants(broadcast.id, page, before, 0.3, 2).forEach((v, i) => v !== undefined && expected.set(page[i], v));
      before += page.length;
    }
    expect(tested).toEqual(expected);
  });

  it("PROGRESSIVE paces the test share, then the rest as a broadcast of its own from the choice", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(4_000);
    const { broadcast } = await w.service.create(WS, draft({ abTest: abTest({ testShare: 0.5 }) }));
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "PROGRESSIVE" });
    await run(w);
    expect(w.queue.jobs).toHaveLength(1_000); // the first wave of the test share
    w.clock.advance(10 * 60_000);
    await run(w);
    const tested = w.queue.jobs.length;
    expect(Math.abs(tested - 2_000)).toBeLessThan(200);
    const waiting = await w.service.get(WS, broadcast.id);
    expect(waiting.abTest).toMatchObject({ state: "waiting", testReleased: tested });
    // Long after the start every wave of the broadcast would be open: the rest starts at 1,000 all the same.
    w.clock.advance(3_600_000);
    await run(w);
    expect(w.queue.jobs.length - tested).toBe(1_000);
    expect((await w.service.get(WS, broadcast.id)).abTest?.winner).toBe(0);
    w.clock.advance(10 * 60_000);
    await run(w);
    expect(w.queue.distinct().size).toBe(4_000);
    expect(w.queue.jobs).toHaveLength(4_000);
  });

  it("keeps a draft's test on update only when given; validation names the field", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft({ abTest: abTest() }));
    await expect(w.service.create(WS, draft({ abTest: abTest({ testShare: 0.9 }) }))).rejects.toMatchObject({ message: expect.stringContaining("abTest.testShare") });
    await expect(w.service.create(WS, draft({ abTest: abTest({ variants: [{ subject: "{{nope}}" }, { subject: "B" }] }) }))).rejects.toMatchObject({ code: "broadcast_unknown_variables" });
    const { broadcast: updated } = await w.service.update(WS, broadcast.id, draft());
    expect(updated.abTest).toBeUndefined();
  });
});
