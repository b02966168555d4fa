import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { openLmdbStore } from "@mailroom/store/lmdb.js";
import type { Store } from "@mailroom/store/port.js";
import { wallAt } from "@mailroom/kit/time-zones.js";
import { ENGAGEMENT_COLLECTION, ENGAGEMENT_RECENT_COLLECTION, EngagementStore, engagementId } from "../adapters/engagement-store.js";
import { DAY_MIN_EVENTS, WEEK_MIN_EVENTS, ZoneClock, hourOfWeek, planBestHour, planBestHours } from "./best-hour.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (iso: string) => Date.parse(iso);

/** `n` events at the given local wall time (minutes past the hour vary), one a week back from `from`. */
function weekly(n: number, from: number, step = 7 * DAY): number[] {
  return Array.from({ length: n }, (_, i) => from - i * step + (i % 4) * 7 * 60_000);
}

describe("the best hour of one contact", () => {
  // Tuesday 2030-01-15; Paris is UTC+1 in January.
  const now = at("2030-01-15T08:00:00Z");

  it("the hour of the week with the most opens and clicks, in the contact's zone, at the first such moment in the window", () => {
    // 12 opens on Tuesdays 19:xx Paris (18:xx UTC), 3 on Tuesdays 10:xx, 4 on Wednesdays 07:xx.
    const events = [
      ...weekly(12, at("2030-01-08T18:05:00Z")),
      ...weekly(3, at("2030-01-08T09:10:00Z")),
      ...weekly(4, at("2030-01-09T06:20:00Z")),
    ];
    const plan = planBestHour(events, "Europe/Paris", now, now);
    expect(plan).toEqual({ basis: "week", events: 19, dueAt: at("2030-01-15T18:00:00Z") });
    // The same history from Tuesday 20:00 Paris: Tuesday 19:00 is gone; Wednesday 07:00 is the best left.
    expect(planBestHour(events, "Europe/Paris", at("2030-01-15T19:00:00Z"), now + 11 * HOUR)).toMatchObject({ basis: "week", dueAt: at("2030-01-16T06:00:00Z") });
    // In New York the same instants are other local hours, and so is the plan (13:00 New York = 18:00 UTC).
    expect(planBestHour(events, "America/New_York", now, now)).toMatchObject({ basis: "week", dueAt: at("2030-01-15T18:00:00Z") });
  });

  it("a window that opens inside the best hour sends at once", () => {
    const events = weekly(12, at("2030-01-08T18:05:00Z"));
    const start = at("2030-01-15T18:40:00Z");
    expect(planBestHour(events, "Europe/Paris", start, start)).toMatchObject({ basis: "week", dueAt: start });
  });

  it("when the week's hours in the window hold no event, the hour of the day", () => {
    // 12 opens on Saturdays 07:xx UTC; the window runs Tuesday 08:00 → Wednesday 08:00.
    const events = weekly(12, at("2030-01-12T07:15:00Z"));
    expect(planBestHour(events, "UTC", now, now)).toEqual({ basis: "day", events: 12, dueAt: at("2030-01-16T07:00:00Z") });
  });

  it(`thin history (${DAY_MIN_EVENTS} to ${WEEK_MIN_EVENTS - 1} events): the hour of the day with the most`, () => {
    // 21:xx UTC on three different weekdays, 06:xx once: hour 21 of the day wins.
    const events = [at("2030-01-10T21:05:00Z"), at("2030-01-06T21:30:00Z"), at("2029-12-30T21:59:00Z"), at("2030-01-11T06:10:00Z")];
    expect(planBestHour(events, "UTC", now, now)).toEqual({ basis: "day", events: 4, dueAt: at("2030-01-15T21:00:00Z") });
    // Ties: the earlier hour in the window.
    const tied = [at("2030-01-10T21:05:00Z"), at("2030-01-06T21:30:00Z"), at("2030-01-11T06:10:00Z"), at("2030-01-04T06:10:00Z")];
    expect(planBestHour(tied, "UTC", now, now).dueAt).toBe(at("2030-01-15T21:00:00Z"));
    expect(planBestHour(tied, "UTC", at("2030-01-15T22:00:00Z"), now).dueAt).toBe(at("2030-01-16T06:00:00Z"));
  });

  it("without enough history (or only events older than 90 days): no plan", () => {
    expect(planBestHour([at("2030-01-10T21:05:00Z"), at("2030-01-06T21:30:00Z")], "UTC", now, now)).toEqual({ basis: "none", events: 2 });
    expect(planBestHour([], "UTC", now, now)).toEqual({ basis: "none", events: 0 });
    const old = weekly(20, at("2029-10-01T10:00:00Z"));
    expect(planBestHour(old, "UTC", now, now)).toEqual({ basis: "none", events: 0 });
  });

  it("an unknown zone counts as UTC (the caller passes the workspace's first)", () => {
    const events = weekly(12, at("2030-01-08T18:05:00Z"));
    expect(planBestHour(events, "Mars/Olympus", now, now)).toEqual(planBestHour(events, "UTC", now, now));
  });

  it("across a change of daylight saving time the best hour stays the local one", () => {
    // New York: opens at 09:xx local all along; EST (UTC-5) before 2030-03-10, EDT (UTC-4) after.
    const events = [...weekly(6, at("2030-03-05T14:10:00Z"), DAY), ...weekly(6, at("2030-03-14T13:10:00Z"), DAY)];
    const start = at("2030-03-15T02:00:00Z");
    expect(planBestHour(events, "America/New_York", start, start)).toMatchObject({ dueAt: at("2030-03-15T13:00:00Z") });
  });

  it("nobody 24 hours or more after the window's start, whatever the history and zone", () => {
    let seed = 11;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor(seed / 65_536) % n);
    const zones = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe", "Pacific/Chatham", "America/Sao_Paulo"];
    for (let k = 0; k < 300; k++) {
      const start = at("2030-03-01T00:00:00Z") + rnd(300) * DAY + rnd(DAY / 1000) * 1000;
      const events = Array.from({ length: rnd(40) }, () => start - rnd(89 * DAY));
      const zone = zones[rnd(zones.length)];
      const plan = planBestHour(events, zone, start, start);
      if (plan.basis === "none") {
        expect(plan.events).toBeLessThan(DAY_MIN_EVENTS);
        continue;
      }
      expect(plan.dueAt!).toBeGreaterThanOrEqual(start);
      expect(plan.dueAt!).toBeLessThan(start + DAY);
      // Due on the hour of the contact's clock (or at the start, inside that hour).
      if (plan.dueAt !== start) expect(wallAt(plan.dueAt!, zone) % HOUR).toBe(0);
    }
  });
});

describe("ZoneClock", () => {
  it("reads the same wall clock as Intl at any instant, across offset changes, and finds the first instant of a wall time", () => {
    for (const zone of ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu", "America/Santiago", "UTC"]) {
      const clock = new ZoneClock(zone);
      for (let t = at("2030-01-01T00:00:00Z"); t < at("2031-01-01T00:00:00Z"); t += 7 * HOUR + 13 * 60_000) {
        expect(clock.wall(t), `${zone} ${new Date(t).toISOString()}`).toBe(wallAt(t, zone));
      }
    }
    const paris = new ZoneClock("Europe/Paris");
    // 02:30 on 2030-03-31 does not exist in Paris; 02:30 on 2030-10-27 occurs twice (the first is UTC+2).
    expect(paris.instantOf(Date.UTC(2030, 2, 31, 2, 30))).toBeUndefined();
    expect(paris.instantOf(Date.UTC(2030, 9, 27, 2, 30))).toBe(at("2030-10-27T00:30:00Z"));
    // Monday 00:00 is hour 0 of the week; Sunday 23:00 is 167.
    expect(hourOfWeek(Date.UTC(2030, 0, 14, 0, 0))).toBe(0);
    expect(hourOfWeek(Date.UTC(2030, 0, 13, 23, 59))).toBe(167);
  });
});

const tempDirs: string[] = [];
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const STORES: [string, () => Promise<Store>][] = [
  ["memory", async () => openMemoryStore()],
  ["lmdb", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mailroom-best-hour-"));
    tempDirs.push(dir);
    return openLmdbStore({ dir });
  }],
];

describe.each(STORES)("the plan of a page of contacts from the engagement store (%s)", (_name, open) => {
  it("reads each contact's opens and clicks of the last 90 days in its zone; delivered mail and other workspaces do not count", async () => {
    const store = await open();
    const engagement = await EngagementStore.open(store);
    const now = at("2030-01-15T08:00:00Z");
    const record = (workspaceId: string, contactId: string, kind: "opened" | "clicked" | "delivered", t: number, i: number) =>
      engagement.record({ workspaceId, contactId, kind, messageId: `cmp_${i}`, broadcastId: `cmp_${i}`, at: new Date(t) });
    // ctc_a: Tuesdays 19:xx Paris (opens and clicks); ctc_b: thin, 21:xx UTC; ctc_c: delivered only;
    // ctc_d: opens in another workspace; ctc_e: old opens only.
    let i = 0;
    for (const t of weekly(6, at("2030-01-08T18:05:00Z"))) {
      await record("ws_a", "ctc_a", "opened", t, i);
      await record("ws_a", "ctc_a", "clicked", t + 60_000, i++);
    }
    for (const t of [at("2030-01-10T21:05:00Z"), at("2030-01-06T21:30:00Z"), at("2029-12-30T21:59:00Z")]) await record("ws_a", "ctc_b", "opened", t, i++);
    for (const t of weekly(12, at("2030-01-08T10:00:00Z"))) await record("ws_a", "ctc_c", "delivered", t, i++);
    for (const t of weekly(12, at("2030-01-08T10:00:00Z"))) await record("ws_b", "ctc_d", "opened", t, i++);
    for (const t of weekly(12, at("2029-09-01T10:00:00Z"))) await record("ws_a", "ctc_e", "opened", t, i++);

    const plans = await planBestHours(engagement, {
      workspaceId: "ws_a",
      windowStart: now,
      defaultTimeZone: "UTC",
      now,
      contacts: [{ id: "ctc_e" }, { id: "ctc_a", timeZone: "Europe/Paris" }, { id: "ctc_b" }, { id: "ctc_c" }, { id: "ctc_d" }, { id: "ctc_zz" }],
    });
    expect(plans).toEqual([
      { basis: "none", events: 0 },
      { basis: "week", events: 12, dueAt: at("2030-01-15T18:00:00Z") },
      { basis: "day", events: 3, dueAt: at("2030-01-15T21:00:00Z") },
      { basis: "none", events: 0 },
      { basis: "none", events: 0 },
      { basis: "none", events: 0 },
    ]);
    // The workspace's zone for contacts without one: opens at 09:xx New York (EST) before the
    // change to daylight saving time are 09:00 EDT after it, 13:00 UTC (14:00 when counted in UTC).
    for (const t of weekly(6, at("2030-03-05T14:10:00Z"), DAY)) await record("ws_a", "ctc_f", "opened", t, i++);
    const later = at("2030-03-15T02:00:00Z");
    const inZone = (defaultTimeZone: string, timeZone = "") => planBestHours(engagement, { workspaceId: "ws_a", windowStart: later, defaultTimeZone, now: later, contacts: [{ id: "ctc_f", timeZone }] });
    expect(await inZone("America/New_York")).toEqual([{ basis: "day", events: 6, dueAt: at("2030-03-15T13:00:00Z") }]);
    expect(await inZone("UTC")).toEqual([{ basis: "day", events: 6, dueAt: at("2030-03-15T14:00:00Z") }]);
    expect(await inZone("UTC", "America/New_York")).toEqual([{ basis: "day", events: 6, dueAt: at("2030-03-15T13:00:00Z") }]);
    // Deleting a contact deletes its recent opens and clicks with its records.
    await engagement.deleteForContact("ws_a", "ctc_f");
    expect((await inZone("UTC"))[0]).toEqual({ basis: "none", events: 0 });
    await store.close();
  });

  it("records kept before the recent times existed count after the backfill, once; a page of many contacts is one range", async () => {
    const store = await open();
    const engagement = await EngagementStore.open(store, { pageSize: 7 });
    const now = at("2030-01-15T08:00:00Z");
    // Written as an older directory did: the records alone (ids as the adapter builds them).
    const old = weekly(12, at("2030-01-08T18:05:00Z")).flatMap((t, i) => ["opened", "clicked", "delivered"].map((kind) => ({
      workspaceId: "ws_a", contactId: `ctc_${String(i % 3).padStart(3, "0")}`, kind: kind as "opened", messageId: `cmp_${i}`, broadcastId: `cmp_${i}`, at: new Date(t),
    })));
    await store.collection(ENGAGEMENT_COLLECTION).insertMany(old.map((e) => ({ _id: engagementId(e), ...e })));
    const contacts = Array.from({ length: 60 }, (_, i) => ({ id: `ctc_${String(i).padStart(3, "0")}` }));
    const plan = () => planBestHours(engagement, { workspaceId: "ws_a", windowStart: now, defaultTimeZone: "UTC", now, contacts });
    expect((await plan()).slice(0, 3).map((p) => p.events)).toEqual([0, 0, 0]);
    expect(await engagement.backfillRecent(new Date(now), 90)).toEqual({ events: 24, updates: expect.any(Number) });
    const plans = await plan();
    expect(plans.slice(0, 3)).toEqual([
      { basis: "day", events: 8, dueAt: at("2030-01-15T18:00:00Z") },
      { basis: "day", events: 8, dueAt: at("2030-01-15T18:00:00Z") },
      { basis: "day", events: 8, dueAt: at("2030-01-15T18:00:00Z") },
    ]);
    expect(plans.slice(3).every((p) => p.basis === "none")).toBe(true);
    // Done once: a second start adds nothing again.
    expect(await engagement.backfillRecent(new Date(now), 90)).toBeNull();
    expect((await plan())[0].events).toBe(8);
    await store.close();
  });

  it("a backfill stopped part-way resumes after the last page it saved, adding nothing twice", async () => {
    const store = await open();
    const engagement = await EngagementStore.open(store, { pageSize: 4 });
    const now = at("2030-01-15T08:00:00Z");
    const old = weekly(10, at("2030-01-08T18:05:00Z")).map((t, i) => ({
      workspaceId: "ws_a", contactId: "ctc_000", kind: "opened" as const, messageId: `cmp_${String(i).padStart(2, "0")}`, broadcastId: `cmp_${String(i).padStart(2, "0")}`, at: new Date(t),
    }));
    const docs = old.map((e) => ({ _id: engagementId(e), ...e })).sort((a, b) => (a._id < b._id ? -1 : 1));
    await store.collection(ENGAGEMENT_COLLECTION).insertMany(docs);
    // As a process that saved its cursor after the first page of 4, then died.
    await store.collection(ENGAGEMENT_RECENT_COLLECTION).insertOne({ _id: "~backfill", after: docs[3]._id });
    await store.collection(ENGAGEMENT_RECENT_COLLECTION).insertOne({ _id: "ws_a:ctc_000", workspaceId: "ws_a", contactId: "ctc_000", times: docs.slice(0, 4).map((d) => Math.floor(d.at.getTime() / 60_000)) });
    expect(await engagement.backfillRecent(new Date(now), 90)).toEqual({ events: 6, updates: 2 });
    const [plan] = await planBestHours(engagement, { workspaceId: "ws_a", windowStart: now, defaultTimeZone: "UTC", now, contacts: [{ id: "ctc_000" }] });
    expect(plan).toEqual({ basis: "week", events: 10, dueAt: at("2030-01-15T18:00:00Z") });
    await store.close();
  });
});
