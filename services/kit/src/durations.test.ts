import { describe, expect, it } from "vitest";
import { checkDuration, durationMs } from "./durations.js";

const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;

describe("durationMs", () => {
  it.each([
    ["PT1S", S],
    ["PT2S", 2 * S],
    ["PT90S", 90 * S],
    ["PT30M", 30 * MIN],
    ["PT1H", H],
    ["P1D", D],
    ["P1W", 7 * D],
    ["P1DT2H", D + 2 * H],
    ["PT1H30M15S", H + 30 * MIN + 15 * S],
    ["P1W2DT3H4M5S", 9 * D + 3 * H + 4 * MIN + 5 * S],
    ["P366D", 366 * D],
  ])("%s is %d ms", (iso, ms) => {
    expect(durationMs(iso)).toBe(ms);
  });

  it.each(["", "P", "PT", "P1DT", "1D", "pt1h", "PT1D", "P1H", "PT-1S", "PT0S", "P0D", "PT0.5S", "P367D", "P53W", "PT1H ", "P1Y", "P1M", "P1Y2M3D"])(
    "refuses %j",
    (iso) => {
      expect(durationMs(iso)).toBeUndefined();
    },
  );

  it("explains why", () => {
    expect(checkDuration("P1M")).toEqual({ error: expect.stringContaining("years or months") });
    expect(checkDuration("P1Y2DT3H")).toEqual({ error: expect.stringContaining("years or months") });
    // PT1M is a minute, not a month.
    expect(checkDuration("PT1M")).toEqual({ ms: MIN });
    expect(checkDuration("PT0.5S")).toEqual({ error: expect.stringContaining("fraction") });
    expect(checkDuration("PT0S")).toEqual({ error: expect.stringContaining("shorter than 1 second") });
    expect(checkDuration("P367D")).toEqual({ error: expect.stringContaining("longer than 366 days") });
    expect(checkDuration("soon")).toEqual({ error: expect.stringContaining("ISO 8601") });
  });
});
