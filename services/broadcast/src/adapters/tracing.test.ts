import { describe, expect, it } from "vitest";
import { currentTraceparent } from "@mailroom/kit/tracing.js";
import type { Broadcast } from "../domain/model.js";
import { sendingLinks, sendingStepScope } from "./tracing.js";

const SCHEDULE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const CHOICE = "00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-00";

describe("sending's links", () => {
  it("point at the schedule request and a user's choice of the winner, each named", () => {
    const b = { id: "cmp_1", workspaceId: "ws_1", traceparent: SCHEDULE, abTest: { winnerTraceparent: CHOICE } } as unknown as Broadcast;
    expect(sendingLinks(b)).toEqual([
      { context: { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1, isRemote: true }, attributes: { "mailroom.link": "scheduled_by" } },
      { context: { traceId: "1bf7651916cd43dd8448eb211c80319c", spanId: "c7ad6b7169203331", traceFlags: 0, isRemote: true }, attributes: { "mailroom.link": "winner_chosen_by" } },
    ]);
  });

  it("are none for a broadcast scheduled while tracing was off, or a malformed value", () => {
    expect(sendingLinks({ id: "cmp_1" } as Broadcast)).toEqual([]);
    expect(sendingLinks({ id: "cmp_1", traceparent: "00-zz-11-01" } as Broadcast)).toEqual([]);
  });

  it("with tracing off the step only runs", async () => {
    expect(await sendingStepScope({ id: "cmp_1", traceparent: SCHEDULE } as Broadcast, async () => currentTraceparent())).toBe("");
  });
});
