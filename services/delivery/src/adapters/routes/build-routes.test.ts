import { describe, expect, it } from "vitest";
import { Pacer } from "../../domain/pacer.js";
import { loadDeliverySettings } from "../../settings.js";
import { MemoryPacing } from "../../testing.js";
import { buildRoutes, rateGate } from "./build-routes.js";

describe("buildRoutes", () => {
  it("builds each route with its target free of credentials and a gate only where a rate is set", async () => {
    const settings = loadDeliverySettings({
      MAILROOM_DELIVERY_ROUTES: JSON.stringify([
        { name: "ses", url: "smtp://AKIA:s3cret@email-smtp.eu-west-1.amazonaws.com:587", provider: "ses", rate: 14, lanes: ["broadcast"] },
        { name: "backup", url: "smtps://relay.test:465", weight: 0 },
      ]),
    });
    const routes = buildRoutes(settings, { pacing: new MemoryPacing() });
    expect(routes.map((r) => [r.name, r.kind, r.target, r.weight, r.provider, Boolean(r.gate)])).toEqual([
      ["ses", "relay", "smtp://***:***@email-smtp.eu-west-1.amazonaws.com:587", 1, "ses", true],
      ["backup", "relay", "smtps://relay.test:465", 0, undefined, false],
    ]);
    expect(routes.some((r) => JSON.stringify({ ...r, transport: r.transport.description }).includes("s3cret"))).toBe(false);
    await Promise.all(routes.map((r) => r.transport.close()));
  });

  it("refuses a direct route when no direct transport is given", () => {
    const settings = loadDeliverySettings({ MAILROOM_DELIVERY_MODE: "direct" });
    expect(() => buildRoutes(settings, { pacing: new MemoryPacing() })).toThrow(/direct delivery is not available/);
  });
});

describe("rateGate", () => {
  it("lets a route's messages go at its rate", async () => {
    const gate = rateGate(new Pacer(new MemoryPacing(), { key: "route-test", rate: 20 }));
    const started = Date.now();
    // A burst of one second's worth, then 10 more at 20/s: about half a second.
    for (let i = 0; i < 30; i++) await gate();
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });
});
