import { describe, expect, it } from "vitest";
import {
  DELIVERY_LANES,
  DELIVERY_SUBJECTS,
  deliveryJobSubject,
  deliveryLaneOf,
  eventSubject,
  eventsOfSource,
  type DeliverySourceName,
} from "./subjects.js";

/** NATS subject matching: '*' is one token, '>' one or more at the end. */
function matches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

describe("mail subjects", () => {
  it("keeps today's transactional job subject and event subjects", () => {
    expect(deliveryJobSubject("transactional")).toBe("mail.delivery.transactional");
    expect(eventSubject("transactional", "sent")).toBe("mail.events.transactional.sent");
    expect(matches(eventsOfSource("transactional"), "mail.events.transactional.bounced")).toBe(true);
  });

  it("puts every job on exactly its own lane, inside the delivery stream", () => {
    const jobs: Array<[DeliverySourceName, string]> = [["transactional", ""], ["test", "cmp_1"], ["broadcast", "cmp_1"]];
    for (const [source, broadcastId] of jobs) {
      const subject = deliveryJobSubject(source, broadcastId);
      expect(matches(DELIVERY_SUBJECTS, subject)).toBe(true);
      const lanes = Object.entries(DELIVERY_LANES).filter(([, lane]) => matches(lane.filter, subject)).map(([name]) => name);
      expect(lanes).toEqual([deliveryLaneOf(source)]);
    }
  });

  it("refuses values that would change a subject's shape", () => {
    expect(() => eventSubject("transactional", "a.b")).toThrow();
    expect(() => deliveryJobSubject("broadcast", "cmp_*")).toThrow();
  });
});
