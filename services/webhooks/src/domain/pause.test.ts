import { describe, expect, it } from "vitest";
import { pauseReason, shouldPause } from "./pause.js";

const rule = { afterMs: 24 * 3600_000, minFailures: 10 };
const t0 = new Date("2030-01-15T12:00:00Z");
const later = (ms: number) => new Date(t0.getTime() + ms);

describe("pause rule", () => {
  it("pauses once every attempt failed for 24 h and at least 10 times", () => {
    expect(shouldPause({ consecutiveFailures: 10, failingSince: t0 }, later(24 * 3600_000), rule)).toBe(true);
  });

  it("does not pause a short outage however many attempts failed", () => {
    expect(shouldPause({ consecutiveFailures: 500, failingSince: t0 }, later(3600_000), rule)).toBe(false);
  });

  it("does not pause a few failures spread over a long time", () => {
    expect(shouldPause({ consecutiveFailures: 3, failingSince: t0 }, later(48 * 3600_000), rule)).toBe(false);
  });

  it("does not pause a healthy endpoint", () => {
    expect(shouldPause({ consecutiveFailures: 0, failingSince: undefined }, later(48 * 3600_000), rule)).toBe(false);
  });

  it("says why", () => {
    expect(pauseReason({ consecutiveFailures: 12, failingSince: t0 }, "HTTP 500")).toBe(
      "Paused automatically: 12 delivery attempts in a row failed since 2030-01-15T12:00:00.000Z (last: HTTP 500)",
    );
  });
});
