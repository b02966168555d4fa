import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

const KEY = "mr_test_request_id_key_1";

/** The log lines of `unit` (JSON, one per line) that name `requestId`. */
async function linesWith(sys: TestSystem, unit: "gateway" | "email" | "delivery", requestId: string) {
  const log = await sys.log(unit, 100_000);
  return log
    .split("\n")
    .filter((line) => line.includes(requestId))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** One x-request-id follows an email from the gateway through the email and delivery services. */
describe("request ids across processes", () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await useSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_trace", name: "Trace", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      env: { MAILROOM_LOG_LEVEL: "debug" },
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("appears in the gateway's, the email service's and the delivery service's log lines for the email", async () => {
    const requestId = `trace-${randomBytes(8).toString("hex")}`;
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      headers: { "x-request-id": requestId },
      body: { from: "team@acme.test", to: "ann@example.test", subject: "Traced", html: "<p>Hello</p>" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get("x-request-id")).toBe(requestId);
    await sys.sink!.waitFor(1, 20_000);

    // Delivery logs after the SMTP transaction: give its last line a moment to reach the file.
    let delivery: Record<string, unknown>[] = [];
    for (let i = 0; i < 50 && !delivery.some((l) => l.msg === "delivery job handled"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      delivery = await linesWith(sys, "delivery", requestId);
    }
    const gateway = await linesWith(sys, "gateway", requestId);
    const email = await linesWith(sys, "email", requestId);
    const context = async () => `\n--- gateway ---\n${await sys.log("gateway")}\n--- email ---\n${await sys.log("email")}\n--- delivery ---\n${await sys.log("delivery")}`;

    expect(gateway.map((l) => l.msg), await context()).toContain("request done");
    // Every unit names it in the same field, so one grep for "requestId":"<id>" finds them all.
    expect(gateway.find((l) => l.msg === "request done"), await context()).toMatchObject({ requestId });
    expect(email.map((l) => l.msg), await context()).toContain("rpc ok");
    expect(email.find((l) => l.msg === "rpc ok" && l.rpc === "SendEmail"), await context()).toMatchObject({ requestId, rpc: "SendEmail" });
    expect(delivery.find((l) => l.msg === "delivery job handled"), await context()).toMatchObject({ requestId, decision: "ack" });
    // Delivery's own RPCs for the job (the accounts unit's sender check; content comes from the content store) carry it on too.
    const others = await Promise.all((["renderer", "accounts"] as const).map(async (u) => (await sys.log(u, 100_000)).includes(requestId)));
    expect(others.some(Boolean)).toBe(true);
  }, 60_000);
});
