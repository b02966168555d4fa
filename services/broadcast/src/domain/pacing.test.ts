import { describe, expect, it } from "vitest";
import {
  progressive,
  releaseDecision,
  releasedInWave,
  smartDueAt,
  waveOf,
  wavesTotal,
  warmup,
  warmupCap,
  warmupToday,
} from "./pacing.js";

const MIN = 60_000;
const start = new Date("2030-01-15T12:00:00Z");
const at = (ms: number) => new Date(start.getTime() + ms);

describe("PROGRESSIVE", () => {
  it("opens waves of 1k, 2k, 4k … every 10 minutes", () => {
    expect(progressive({ startedAt: start, now: start, released: 0, waveBounces: {} })).toEqual({ allowed: 1_000, nextAt: at(10 * MIN) });
    expect(progressive({ startedAt: start, now: at(10 * MIN - 1), released: 1_000, waveBounces: {} }).allowed).toBe(0);
    expect(progressive({ startedAt: start, now: at(10 * MIN), released: 1_000, waveBounces: {} })).toEqual({ allowed: 2_000, nextAt: at(20 * MIN) });
    expect(progressive({ startedAt: start, now: at(25 * MIN), released: 3_000, waveBounces: {} }).allowed).toBe(4_000);
    // A late look releases everything that is due (the waves are cumulative).
    expect(progressive({ startedAt: start, now: at(31 * MIN), released: 500, waveBounces: {} }).allowed).toBe(15_000 - 500);
  });

  it("numbers waves by release order", () => {
    expect([0, 999, 1_000, 2_999, 3_000, 6_999, 7_000].map(waveOf)).toEqual([0, 0, 1, 1, 2, 2, 3]);
    expect(wavesTotal(2)).toBe(7_000);
    expect(releasedInWave(1, 2_000)).toBe(1_000);
    expect(releasedInWave(2, 2_000)).toBe(0);
  });

  it("stops early when a wave's bounce rate passes 5 %", () => {
    const now = at(60 * MIN);
    expect(progressive({ startedAt: start, now, released: 1_000, waveBounces: { w0: 50 } }).pause).toBeUndefined();
    expect(progressive({ startedAt: start, now, released: 1_000, waveBounces: { w0: 51 } })).toEqual({ allowed: 0, pause: "bounce_rate" });
    // Measured against what the wave released so far: 6 of 100 is 6 %.
    expect(progressive({ startedAt: start, now, released: 1_100, waveBounces: { w0: 10, w1: 6 } }).pause).toBe("bounce_rate");
  });
});

describe("WARMUP", () => {
  it("ramps 1k, 1.5k, 2k, 3k, 5k, 7k, 10k, then ×1.3 a day", () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map(warmupCap)).toEqual([1_000, 1_500, 2_000, 3_000, 5_000, 7_000, 10_000, 13_000, 16_900]);
  });

  it("caps each UTC day per account; the rest waits for the next day", () => {
    expect(warmup(undefined, start)).toEqual({ allowed: 1_000, nextAt: new Date("2030-01-16T00:00:00Z") });
    const account = { day: "2030-01-15", activeDaysBefore: 0, sentOnDay: 1_000 };
    expect(warmup(account, start).allowed).toBe(0);
    const tomorrow = new Date("2030-01-16T00:00:01Z");
    expect(warmupToday(account, tomorrow)).toEqual({ day: "2030-01-16", activeDaysBefore: 1, sentOnDay: 0 });
    expect(warmup(account, tomorrow).allowed).toBe(1_500);
    // A day without sends does not advance the ramp.
    expect(warmupToday({ day: "2030-01-15", activeDaysBefore: 2, sentOnDay: 0 }, tomorrow).activeDaysBefore).toBe(2);
  });
});

describe("SMART", () => {
  const sendAt = new Date("2030-01-15T08:00:00Z"); // 09:00 in Paris

  it("sends at sendAt's wall-clock time in the workspace timezone, in each contact's timezone", () => {
    // 09:00 New York = 14:00Z the same day.
    expect(smartDueAt(sendAt, "Europe/Paris", "America/New_York").toISOString()).toBe("2030-01-15T14:00:00.000Z");
    // 09:00 Tokyo on the 15th (00:00Z) is already past: the next day's 09:00 Tokyo.
    expect(smartDueAt(sendAt, "Europe/Paris", "Asia/Tokyo").toISOString()).toBe("2030-01-16T00:00:00.000Z");
    expect(smartDueAt(sendAt, "Europe/Paris", "Europe/Paris").toISOString()).toBe(sendAt.toISOString());
  });

  it("sends contacts without a (valid) timezone at sendAt, and never more than 24 h later", () => {
    expect(smartDueAt(sendAt, "Europe/Paris", "")).toEqual(sendAt);
    expect(smartDueAt(sendAt, "Europe/Paris", "Mars/Olympus")).toEqual(sendAt);
    for (const tz of ["Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kathmandu", "America/St_Johns", "UTC"]) {
      const due = smartDueAt(sendAt, "Europe/Paris", tz).getTime();
      expect(due).toBeGreaterThanOrEqual(sendAt.getTime());
      expect(due - sendAt.getTime()).toBeLessThanOrEqual(24 * 3600_000);
    }
  });

  it("keeps sendAt's milliseconds: a contact in the workspace's zone (or one with its offset) gets it at sendAt, not a day later", () => {
    const precise = new Date("2030-01-15T08:00:00.250Z");
    expect(smartDueAt(precise, "Asia/Tokyo", "Asia/Tokyo")).toEqual(precise);
    expect(smartDueAt(precise, "Asia/Tokyo", "Asia/Seoul")).toEqual(precise);
    expect(smartDueAt(precise, "Europe/Paris", "America/New_York").toISOString()).toBe("2030-01-15T14:00:00.250Z");
  });

  it("keeps the wall-clock time across a DST change", () => {
    // 09:00 Paris on 2030-03-30 (UTC+1); New York is already on DST (UTC-4).
    const before = new Date("2030-03-30T08:00:00Z");
    expect(smartDueAt(before, "Europe/Paris", "America/New_York").toISOString()).toBe("2030-03-30T13:00:00.000Z");
  });
});

describe("releaseDecision", () => {
  it("lets ASAP and SMART release without a count cap", () => {
    for (const method of ["ASAP", "SMART"] as const) {
      expect(releaseDecision({ method, startedAt: start, now: start, released: 10 ** 6, waveBounces: {} }).allowed).toBe(Infinity);
    }
  });
});
