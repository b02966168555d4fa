import { describe, expect, it } from "vitest";
import { applyEvent, applyEvents, type BroadcastEvent } from "./outcomes.js";
import { buildTestWorld, draft, silentLogger } from "../testing.js";

/** Two identical worlds: one fed event by event, the other the same events as one batch. */
async function world() {
  const w = await buildTestWorld();
  const { broadcast } = await w.service.create("ws_acme", draft());
  const id = broadcast.id;
  await w.repos.ledger.add([
    { deliveryId: `${id}.c1`, broadcastId: id, wave: 0 },
    { deliveryId: `${id}.c2`, broadcastId: id, wave: 0 },
    { deliveryId: `${id}.c3`, broadcastId: id, wave: 1 },
    { deliveryId: `${id}.c4`, broadcastId: id, wave: 1 },
  ]);
  const deps = { broadcasts: w.repos.broadcasts, pages: w.repos.pages, ledger: w.repos.ledger, timeline: w.repos.timeline, clock: w.clock, logger: silentLogger };
  return { w, id, deps };
}

const eventsFor = (id: string): BroadcastEvent[] =>
  (
    [
      ["sent", "c1"],
      ["sent", "c2"],
      ["sent", "c1"], // redelivered: counts once
      ["bounced", "c2"], // after its 250: delivered goes back down
      ["bounced", "c3"], // another wave
      ["failed", "c4"],
      ["sent", "c9"], // not in the ledger: ignored
      ["deferred", "c4"],
    ] as const
  ).map(([kind, c]) => ({ kind, broadcastId: id, deliveryId: `${id}.${c}`, contactId: "", messageId: "" }));

describe("applyEvents (a batch of one broadcast's events)", () => {
  it("counts exactly what applying the events one by one counts, wave bounces included", async () => {
    const one = await world();
    for (const e of eventsFor(one.id)) await applyEvent(one.deps, e);
    const batch = await world();
    await applyEvents(batch.deps, batch.id, eventsFor(batch.id));

    const a = await one.deps.broadcasts.progressOf(one.id);
    const b = await batch.deps.broadcasts.progressOf(batch.id);
    expect(b!.progress).toEqual(a!.progress);
    expect(b!.progress).toMatchObject({ sent: 2, delivered: 1, bounced: 2, failed: 1, finalized: 4 });
    expect(b!.sending?.waveBounces ?? {}).toEqual(a!.sending?.waveBounces ?? {});
    expect(await batch.deps.ledger.tally(batch.id)).toEqual(await one.deps.ledger.tally(one.id));
  });

  it("ignores events of another broadcast and a batch with nothing to count", async () => {
    const { id, deps } = await world();
    await applyEvents(deps, id, [{ kind: "sent", broadcastId: "cmp_other", deliveryId: `${id}.c1`, contactId: "", messageId: "" }]);
    await applyEvents(deps, id, []);
    expect((await deps.broadcasts.progressOf(id))!.progress.sent ?? 0).toBe(0);
  });
});
