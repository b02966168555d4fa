import { AggregatorRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { gauge, metricsRegistry } from "./metrics.js";

/** What one worker's registry would report for the gauge named, with `value` set. */
async function workerReport(name: string, value: number) {
  gauge(name, "test").set(value);
  return (await metricsRegistry.getMetricsAsJSON()).filter((m) => m.name === name).map((m) => structuredClone(m));
}

describe("gauges across workers", () => {
  it("combine as declared: summed by default, the largest for a shared backlog, the smallest for health", async () => {
    gauge("kit_test_in_flight", "test");
    gauge("kit_test_backlog", "test", [], undefined, "max");
    gauge("kit_test_up", "test", [], undefined, "min");
    const scrape = async (name: string, a: number, b: number) => {
      const merged = AggregatorRegistry.aggregate([await workerReport(name, a), await workerReport(name, b)]);
      return (await merged.getSingleMetric(name)!.get()).values[0].value;
    };
    expect(await scrape("kit_test_in_flight", 3, 4)).toBe(7);
    expect(await scrape("kit_test_backlog", 500, 500)).toBe(500);
    expect(await scrape("kit_test_up", 1, 0)).toBe(0);
  });
});
