import { describe, expect, it } from "vitest";
import { DIRECTORY_EVENT_BATCH_BYTES, DIRECTORY_EVENT_BATCH_MAX, directoryEventBatchBody, directoryEventBatches } from "@mailroom/pipeline/directory-events.js";
import { directoryEventOf, directoryEventsOf } from "./consumers.js";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("DIRECTORY_EVENTS events as webhook bodies", () => {
  it("takes the suppression list's changes (SUPPRESSION_CREATED / SUPPRESSION_DELETED) as they come", () => {
    for (const type of ["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"]) {
      const body = { id: "dev_1", type, createdAt: "2026-11-29T12:00:00.000Z", workspaceId: "ws_a", data: { suppression: { domain: "x.test", reason: "manual", createdAt: "2026-11-29T12:00:00.000Z" } } };
      expect(directoryEventOf(encode(body))).toEqual(body);
    }
  });

  it("drops names it does not know and malformed bodies", () => {
    expect(directoryEventOf(encode({ id: "dev_1", type: "SUPPRESSION_MOVED", createdAt: "2026-11-29T12:00:00.000Z", workspaceId: "ws_a", data: {} }))).toBeUndefined();
    expect(directoryEventOf(new TextEncoder().encode("{"))).toBeUndefined();
  });
});

describe("a batch message of DIRECTORY_EVENTS events", () => {
  const suppression = (i: number) => ({ id: `dev_${i}`, type: "SUPPRESSION_CREATED", createdAt: "2026-11-29T12:00:00.000Z", workspaceId: "ws_a", data: { suppression: { email: `u${i}@x.test`, reason: "imported", createdAt: "2026-11-29T12:00:00.000Z" } } });

  it("gives every event it carries, in order, and a single event as one", () => {
    const events = [suppression(1), suppression(2), suppression(3)];
    expect(directoryEventsOf(encode({ events }))).toEqual(events);
    expect(directoryEventsOf(encode(events[0]))).toEqual([events[0]]);
  });

  it("leaves out an entry that is not an event, and holds nothing when none is", () => {
    expect(directoryEventsOf(encode({ events: [suppression(1), { id: "x" }, suppression(2)] }))).toEqual([suppression(1), suppression(2)]);
    expect(directoryEventsOf(encode({ events: [] }))).toBeUndefined();
    expect(directoryEventsOf(encode({ events: [{ id: "x" }] }))).toBeUndefined();
    // directoryEventOf (one event) does not take a batch of several.
    expect(directoryEventOf(encode({ events: [suppression(1), suppression(2)] }))).toBeUndefined();
  });

  it("is cut by its publisher (the audience or accounts unit) within its bounds, every event kept once", () => {
    const bodies = Array.from({ length: 1_000 }, (_, i) => JSON.stringify(suppression(i)));
    const batches = directoryEventBatches(bodies);
    expect(batches.every((b) => b.length <= DIRECTORY_EVENT_BATCH_MAX && directoryEventBatchBody(b).length <= DIRECTORY_EVENT_BATCH_BYTES + 64)).toBe(true);
    expect(batches.flat()).toEqual(bodies);
    const events = batches.flatMap((b) => directoryEventsOf(new TextEncoder().encode(directoryEventBatchBody(b)))!);
    expect(events.map((e) => e.id)).toEqual(bodies.map((_, i) => `dev_${i}`));
  });
});
