import { describe, expect, it } from "vitest";
import { buildTestWorld, draft, silentLogger, type TestWorld } from "../testing.js";
import { Sender } from "./sending.js";
import type { SendingStepScope } from "./ports.js";

/*
 * DESIGN §9.10: sending runs after the schedule request returned, so the request's trace
 * context is kept on the broadcast and every step that publishes page jobs runs in the scope
 * the adapter turns into a trace linked to it (adapters/tracing.ts). The scope here records.
 */

const WS = "ws_acme";
const SCHEDULE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const CHOICE = "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01";

interface Scoped {
  phase?: string;
  traceparent?: string;
  winnerTraceparent?: string;
  /** Page jobs published while the step ran. */
  pages: number;
}

function recordingSender(w: TestWorld) {
  const steps: Scoped[] = [];
  const stepScope: SendingStepScope = async (broadcast, step) => {
    const before = w.queue.published.length;
    const result = await step();
    steps.push({
      phase: broadcast.sending?.phase,
      traceparent: broadcast.traceparent,
      winnerTraceparent: broadcast.abTest?.winnerTraceparent,
      pages: w.queue.published.length - before,
    });
    return result;
  };
  const sender = new Sender({ ...w.repos, directory: w.directory, queue: w.queue, deliveryContent: w.content, clock: w.clock, logger: silentLogger, events: w.events, stepScope }, { owner: "test-process" });
  return { sender, steps };
}

async function run(sender: Sender) {
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

describe("the schedule request's trace context", () => {
  it("is kept on the broadcast while scheduled, and dropped by a cancel (a later schedule brings its own)", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { sendAt: new Date(w.clock.now().getTime() + 3_600_000), traceparent: SCHEDULE });
    expect((await w.service.get(WS, broadcast.id)).traceparent).toBe(SCHEDULE);
    await w.service.cancel(WS, broadcast.id);
    expect((await w.service.get(WS, broadcast.id)).traceparent).toBeUndefined();
    // Tracing off at the next schedule: nothing stored.
    await w.service.schedule(WS, broadcast.id, { traceparent: "" });
    expect((await w.service.get(WS, broadcast.id)).traceparent).toBeUndefined();
  });

  it("reaches every step that publishes page jobs; draining checks run unscoped", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(2_300);
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP", traceparent: SCHEDULE });
    const { sender, steps } = recordingSender(w);
    await run(sender);
    expect(w.queue.published.length).toBeGreaterThan(1);
    // Every page job went out inside a scoped step, and every scoped step saw the schedule's context.
    expect(steps.reduce((n, s) => n + s.pages, 0)).toBe(w.queue.published.length);
    expect(steps.every((s) => s.traceparent === SCHEDULE)).toBe(true);
    expect((await w.service.get(WS, broadcast.id)).sending?.phase).toBe("draining");
    // The completion checks that follow (every few seconds until the last outcome) start no trace.
    const scopedSteps = steps.length;
    for (let i = 0; i < 3; i++) {
      w.clock.advance(10_000);
      await run(sender);
    }
    expect(steps).toHaveLength(scopedSteps);
    expect(steps.map((s) => s.phase)).not.toContain("draining");
  });

  it("an A/B test's rest also links to the user's choice of the winner", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1_000);
    const abTest = { variants: [{ subject: "A" }, { subject: "B" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600 };
    const { broadcast } = await w.service.create(WS, draft({ abTest }));
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP", traceparent: SCHEDULE });
    const { sender, steps } = recordingSender(w);
    await run(sender);
    const tested = w.queue.published.length;
    expect(tested).toBeGreaterThan(0);
    const chosen = await w.service.chooseWinner(WS, broadcast.id, 1, CHOICE);
    expect(chosen.abTest?.winnerTraceparent).toBe(CHOICE);
    const before = steps.length;
    await run(sender);
    expect(w.queue.published.length).toBeGreaterThan(tested);
    const restSteps = steps.slice(before).filter((s) => s.pages > 0);
    expect(restSteps.length).toBeGreaterThan(0);
    expect(restSteps.every((s) => s.traceparent === SCHEDULE && s.winnerTraceparent === CHOICE)).toBe(true);
  });
});
