import { describe, expect, it } from "vitest";
import { isTimeZone, nextWallClock } from "./time-zones.js";

describe("isTimeZone", () => {
  it("knows IANA zones and nothing else", () => {
    expect(isTimeZone("Europe/Paris")).toBe(true);
    expect(isTimeZone("America/New_York")).toBe(true);
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("")).toBe(false);
    expect(isTimeZone("Mars/Olympus_Mons")).toBe(false);
    expect(isTimeZone("Europe/Paris".repeat(10))).toBe(false);
    // Offsets are no zones, on every Node version (24's Intl accepts them, 20's does not).
    for (const offset of ["+02:00", "-05:00", "+0530", "\u221203:00"]) expect(isTimeZone(offset), offset).toBe(false);
  });
});

/**
 * The fake clock: `now` is a fixed instant passed in; every expectation is a UTC instant, so a
 * wrong offset anywhere shows as an hour off.
 */
describe("nextWallClock across DST changes", () => {
  const at = (iso: string) => new Date(iso);
  const next = (now: string, time: string, tz: string, days?: Parameters<typeof nextWallClock>[2]) =>
    nextWallClock(at(now), time, days, tz).toISOString();

  describe("Europe/Paris (2026-03-29 02:00→03:00, 2026-10-25 03:00→02:00)", () => {
    const tz = "Europe/Paris";

    it("09:00 every day stays 09:00 local across spring forward: 08:00Z, then 07:00Z", () => {
      // Saturday 2026-03-28 20:00 CET (UTC+1).
      expect(next("2026-03-28T19:00:00Z", "09:00", tz)).toBe("2026-03-29T07:00:00.000Z");
      // The day before, still winter time: 09:00 CET is 08:00Z.
      expect(next("2026-03-27T19:00:00Z", "09:00", tz)).toBe("2026-03-28T08:00:00.000Z");
      // Chained from each result, one day at a time.
      expect(next("2026-03-28T08:00:00Z", "09:00", tz)).toBe("2026-03-29T07:00:00.000Z");
      expect(next("2026-03-29T07:00:00Z", "09:00", tz)).toBe("2026-03-30T07:00:00.000Z");
    });

    it("09:00 every day stays 09:00 local across fall back: 07:00Z, then 08:00Z", () => {
      expect(next("2026-10-24T18:00:00Z", "09:00", tz)).toBe("2026-10-25T08:00:00.000Z");
      expect(next("2026-10-23T18:00:00Z", "09:00", tz)).toBe("2026-10-24T07:00:00.000Z");
      expect(next("2026-10-25T08:00:00Z", "09:00", tz)).toBe("2026-10-26T08:00:00.000Z");
    });

    it("a time in the spring gap (02:30 on 2026-03-29) is the first valid minute after it, 03:00 CEST", () => {
      expect(next("2026-03-28T19:00:00Z", "02:30", tz)).toBe("2026-03-29T01:00:00.000Z");
      expect(next("2026-03-28T19:00:00Z", "02:00", tz)).toBe("2026-03-29T01:00:00.000Z");
      // 03:00 itself exists (it is the first minute of summer time).
      expect(next("2026-03-28T19:00:00Z", "03:00", tz)).toBe("2026-03-29T01:00:00.000Z");
      // 01:59 is still winter time.
      expect(next("2026-03-28T19:00:00Z", "01:59", tz)).toBe("2026-03-29T00:59:00.000Z");
      // The next day, 02:30 exists again (CEST).
      expect(next("2026-03-29T01:00:00Z", "02:30", tz)).toBe("2026-03-30T00:30:00.000Z");
    });

    it("a time in the repeated hour (02:30 on 2026-10-25) is its first occurrence (CEST)", () => {
      // 02:30 CEST = 00:30Z; the repeat, 02:30 CET, is 01:30Z.
      expect(next("2026-10-24T18:00:00Z", "02:30", tz)).toBe("2026-10-25T00:30:00.000Z");
      // Waiting from between the two occurrences: that day's 02:30 has passed; the next is the day after.
      expect(next("2026-10-25T00:45:00Z", "02:30", tz)).toBe("2026-10-26T01:30:00.000Z");
    });
  });

  describe("America/New_York (2026-03-08 02:00→03:00, 2026-11-01 02:00→01:00)", () => {
    const tz = "America/New_York";

    it("09:00 every day stays 09:00 local across spring forward: 14:00Z, then 13:00Z", () => {
      // Saturday 2026-03-07 20:00 EST (UTC-5).
      expect(next("2026-03-08T01:00:00Z", "09:00", tz)).toBe("2026-03-08T13:00:00.000Z");
      expect(next("2026-03-07T01:00:00Z", "09:00", tz)).toBe("2026-03-07T14:00:00.000Z");
    });

    it("09:00 every day stays 09:00 local across fall back: 13:00Z, then 14:00Z", () => {
      // Saturday 2026-10-31 20:00 EDT (UTC-4).
      expect(next("2026-11-01T00:00:00Z", "09:00", tz)).toBe("2026-11-01T14:00:00.000Z");
      expect(next("2026-10-31T00:00:00Z", "09:00", tz)).toBe("2026-10-31T13:00:00.000Z");
    });

    it("the spring gap goes to 03:00 EDT; the repeated 01:30 is its first (EDT) occurrence", () => {
      expect(next("2026-03-08T01:00:00Z", "02:30", tz)).toBe("2026-03-08T07:00:00.000Z");
      // 01:30 EDT = 05:30Z; 01:30 EST would be 06:30Z.
      expect(next("2026-11-01T00:00:00Z", "01:30", tz)).toBe("2026-11-01T05:30:00.000Z");
    });

    it("evening times: the local date is not the UTC date", () => {
      // 2026-03-07 22:00 EST is 03:00Z on the 8th; 23:00 local that day is 04:00Z on the 8th.
      expect(next("2026-03-08T03:00:00Z", "23:00", tz)).toBe("2026-03-08T04:00:00.000Z");
      // After the change, 23:00 EDT is 03:00Z.
      expect(next("2026-03-08T04:00:00Z", "23:00", tz)).toBe("2026-03-09T03:00:00.000Z");
    });
  });

  it("days: the next Monday, even across the Paris spring change", () => {
    // Saturday 2026-03-28, 20:00 CET: Monday 2026-03-30 09:00 CEST.
    expect(next("2026-03-28T19:00:00Z", "09:00", "Europe/Paris", ["mon"])).toBe("2026-03-30T07:00:00.000Z");
    // On a Monday after 09:00: the Monday after (a week on), still in New York time.
    expect(next("2026-03-09T15:00:00Z", "09:00", "America/New_York", ["mon"])).toBe("2026-03-16T13:00:00.000Z");
    // Several days: the nearest one. Saturday → Sunday.
    expect(next("2026-03-28T19:00:00Z", "09:00", "Europe/Paris", ["wed", "sun"])).toBe("2026-03-29T07:00:00.000Z");
    // An empty list is every day.
    expect(next("2026-03-28T19:00:00Z", "09:00", "Europe/Paris", [])).toBe("2026-03-29T07:00:00.000Z");
  });

  it("is strictly after now: now exactly at the time is the next occurrence", () => {
    expect(next("2026-03-29T07:00:00Z", "09:00", "Europe/Paris")).toBe("2026-03-30T07:00:00.000Z");
    expect(next("2026-03-29T06:59:59.999Z", "09:00", "Europe/Paris")).toBe("2026-03-29T07:00:00.000Z");
    expect(next("2026-03-30T07:00:00Z", "09:00", "Europe/Paris", ["mon"])).toBe("2026-04-06T07:00:00.000Z");
    expect(next("2026-06-01T00:00:00Z", "00:00", "UTC")).toBe("2026-06-02T00:00:00.000Z");
  });

  it("half-hour zones and the date line", () => {
    // India (UTC+5:30, no DST): 09:00 IST is 03:30Z.
    expect(next("2026-03-28T19:00:00Z", "09:00", "Asia/Kolkata")).toBe("2026-03-29T03:30:00.000Z");
    // Kiribati (UTC+14): 09:00 on the 30th local is 19:00Z on the 29th.
    expect(next("2026-03-29T12:00:00Z", "09:00", "Pacific/Kiritimati")).toBe("2026-03-29T19:00:00.000Z");
  });

  it("refuses a malformed time", () => {
    expect(() => nextWallClock(new Date(), "9:00", undefined, "UTC")).toThrow(RangeError);
    expect(() => nextWallClock(new Date(), "24:00", undefined, "UTC")).toThrow(RangeError);
  });
});
