import { describe, expect, it } from "vitest";
import { looksLikeSrs, srsForward, srsReverse, SRS_MAX_AGE_DAYS } from "./srs.js";

const SECRET = "test-secret-0123456789abcdef";
const now = new Date("2026-11-29T12:00:00Z");
const days = (n: number) => new Date(now.getTime() + n * 24 * 3600_000);

describe("SRS", () => {
  it("rewrites a sender as SRS0=hash=stamp=domain=local at our domain, and reverses it", () => {
    const srs = srsForward(SECRET, "Ann.Lee@Sender.Example", "bounces.acme.test", now);
    expect(srs).toMatch(/^SRS0=[a-z2-7]{6}=[a-z2-7]{2}=sender\.example=Ann\.Lee@bounces\.acme\.test$/);
    expect(srsReverse(SECRET, srs, now)).toBe("Ann.Lee@sender.example");
    expect(looksLikeSrs(srs)).toBe(true);
  });

  it("survives an MTA that folds the case of the local part", () => {
    const srs = srsForward(SECRET, "ann@sender.example", "bounces.acme.test", now);
    expect(srsReverse(SECRET, srs.toUpperCase(), now)).toBe("ANN@sender.example");
    expect(srsReverse(SECRET, srs.toLowerCase(), now)).toBe("ann@sender.example");
  });

  it("keeps a local part that holds = and +", () => {
    const srs = srsForward(SECRET, "a=b+c@x.example", "fwd.test", now);
    expect(srsReverse(SECRET, srs, now)).toBe("a=b+c@x.example");
  });

  it("refuses a forged or altered address, another secret's, and one past its age", () => {
    const srs = srsForward(SECRET, "ann@sender.example", "fwd.test", now);
    expect(srsReverse("another-secret", srs, now)).toBeUndefined();
    expect(srsReverse(SECRET, srs.replace("sender.example", "victim.example"), now)).toBeUndefined();
    expect(srsReverse(SECRET, srs.replace("=ann@", "=bob@"), now)).toBeUndefined();
    expect(srsReverse(SECRET, "SRS0=aaaaaa=aa=sender.example=ann@fwd.test", now)).toBeUndefined();
    expect(srsReverse(SECRET, srs, days(SRS_MAX_AGE_DAYS))).toBe("ann@sender.example");
    expect(srsReverse(SECRET, srs, days(SRS_MAX_AGE_DAYS + 1))).toBeUndefined();
    expect(srsReverse(SECRET, "ann@sender.example", now)).toBeUndefined();
    expect(srsReverse(SECRET, "SRS0=x@fwd.test", now)).toBeUndefined();
  });

  it("verifies under the previous secret while rotating", () => {
    const srs = srsForward("old-secret", "ann@sender.example", "fwd.test", now);
    expect(srsReverse(["new-secret", "old-secret"], srs, now)).toBe("ann@sender.example");
  });

  it("counts the stamp's age across its modulo-1024 wraparound", () => {
    // Day 1023 of a cycle, checked on day 2 of the next: three days old.
    const lastOfCycle = new Date(1023 * 24 * 3600_000 + 3_600_000);
    const srs = srsForward(SECRET, "ann@sender.example", "fwd.test", lastOfCycle);
    expect(srsReverse(SECRET, srs, new Date(lastOfCycle.getTime() + 3 * 24 * 3600_000))).toBe("ann@sender.example");
  });

  it("wraps another forwarder's SRS0 address as SRS1, which reverses to that SRS0 address", () => {
    const theirs = srsForward("their-secret", "ann@sender.example", "first.example", now);
    const ours = srsForward(SECRET, theirs, "fwd.test", now);
    expect(ours).toMatch(/^SRS1=[a-z2-7]{6}=first\.example==[a-z2-7]{6}=[a-z2-7]{2}=sender\.example=ann@fwd\.test$/);
    expect(srsReverse(SECRET, ours, now)).toBe(theirs);
    expect(srsReverse("their-secret", srsReverse(SECRET, ours, now)!, now)).toBe("ann@sender.example");
    // An SRS1 of another forwarder stays SRS1 (first forwarder kept), rehashed by us.
    const again = srsForward("third-secret", ours, "third.example", now);
    expect(again).toMatch(/^SRS1=[a-z2-7]{6}=first\.example==/);
    expect(srsReverse("third-secret", again, now)).toBe(theirs);
  });

  it("forwards the null sender as the null sender", () => {
    expect(srsForward(SECRET, "", "fwd.test", now)).toBe("");
    expect(srsForward(SECRET, "<>", "fwd.test", now)).toBe("");
  });
});
