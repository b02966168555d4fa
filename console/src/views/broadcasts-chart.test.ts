import { describe, expect, it } from "vitest";
import { progressChart } from "./broadcasts-chart.js";

const at = (iso: string) => new Date(iso);
const zero = { sent: 0, delivered: 0, opened: 0, clicked: 0 };

describe("the progress chart's planned curve (SMART, OPTIMAL)", () => {
  it("draws the planned recipients' running total beside the sent line, to the last due minute", () => {
    const points = [
      { at: at("2030-01-15T08:00:00Z"), ...zero, sent: 2, planned: 2 },
      { at: at("2030-01-15T10:00:00Z"), ...zero, planned: 3 },
      { at: at("2030-01-16T07:00:00Z"), ...zero, planned: 1 },
    ];
    const html = progressChart(points, "Progress", { start: at("2030-01-15T08:00:00Z"), now: at("2030-01-15T09:00:00Z") }).toString();
    expect(html).toContain('data-series="planned"');
    expect(html).toContain("Planned 6 by 07:00 UTC");
    expect(html).toContain("Sent 2");
    // The axis runs to the last planned minute's end, not to now.
    expect(html).toContain('data-end="2030-01-16T07:01:00.000Z"');
    // The chart's data table is the actual lines' (one row per point that had sends).
    expect(html.match(/<tr><td>/g)).toHaveLength(3);
  });

  it("shows the plan before anything is sent; without a plan, nothing changes", () => {
    const planOnly = progressChart([{ at: at("2030-01-15T10:00:00Z"), ...zero, planned: 4 }], "Progress", { start: at("2030-01-15T08:00:00Z"), now: at("2030-01-15T08:30:00Z") }).toString();
    expect(planOnly).not.toContain("data-chart-empty");
    expect(planOnly).toContain("Planned 4");
    const actual = progressChart([{ at: at("2030-01-15T08:00:00Z"), ...zero, sent: 2 }], "Progress", { start: at("2030-01-15T08:00:00Z"), now: at("2030-01-15T08:30:00Z") }).toString();
    expect(actual).not.toContain("Planned");
    expect(progressChart([], "Progress").toString()).toContain("data-chart-empty");
  });
});
