/**
 * Operable in production: the real system (every unit a process), one email through the public
 * API, then every process's /metrics, /healthz and /readyz, as Prometheus and a load balancer
 * would read them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { availableUnits, type UnitName } from "../../deploy/processes.js";
import { DELIVERY_STREAM } from "@mailroom/pipeline/subjects.js";
import { freePort } from "../harness/ports.js";
import { startSystem, type TestSystem } from "../harness/system.js";
import { declares, sampleSum, scrape } from "./prometheus.js";

const KEY = "mr_test_ops_key_1";
const units = availableUnits().map((u) => u.name);

describe("metrics and health of every process", () => {
  let sys: TestSystem;
  let inboundPort: number;
  let submissionPort: number;
  const urlOf = (unit: UnitName) =>
    unit === "gateway" ? sys.gatewayUrl : `http://127.0.0.1:${unit === "inbound" ? inboundPort : unit === "submission" ? submissionPort : sys.ports[unit]}`;

  beforeAll(async () => {
    inboundPort = await freePort();
    submissionPort = await freePort();
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_ops", name: "Ops", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units,
      // Every other unit's port is set per unit; inbound's health server takes this one, the
      // submission unit's its own (both listen for SMTP on the port the harness gives them).
      env: { MAILROOM_SERVICE_PORT: String(inboundPort), MAILROOM_SUBMISSION_HEALTH_PORT: String(submissionPort) },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("counts an email through the gateway, the email service's RPCs and the delivery consumer", async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme <team@acme.test>", to: "ann@example.test", subject: "Measured", html: "<p>Hi</p>" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await sys.sink!.waitFor(1, 20_000);

    const gateway = await scrape(sys.gatewayUrl);
    // The route pattern and status, never the raw URL.
    expect(sampleSum(gateway, "mailroom_http_requests_total", { method: "POST", route: "/v1/emails", status: "200" })).toBe(1);
    expect(sampleSum(gateway, "mailroom_http_request_duration_seconds_count", { method: "POST", route: "/v1/emails" })).toBe(1);

    const email = await scrape(urlOf("email"));
    const sendEmail = { service: "mailroom.email.v1.EmailService", method: "SendEmail" };
    expect(sampleSum(email, "mailroom_rpc_server_handled_total", { ...sendEmail, code: "ok" })).toBe(1);
    expect(sampleSum(email, "mailroom_rpc_server_duration_seconds_count", sendEmail)).toBe(1);
    expect(sampleSum(email, "mailroom_store_operation_duration_seconds_count")).toBeGreaterThan(0);

    // The accounts unit answered the gateway's key check and the email service's sender check.
    expect(sampleSum(await scrape(urlOf("accounts")), "mailroom_rpc_server_handled_total", { code: "ok" })).toBeGreaterThanOrEqual(2);
    // The audience unit answered the email service's ReserveSendable (its suppression check).
    expect(sampleSum(await scrape(urlOf("audience")), "mailroom_rpc_server_handled_total", { code: "ok" })).toBeGreaterThanOrEqual(1);

    // The delivery's ack may land a moment after the sink has the message.
    await expect.poll(async () => sampleSum(await scrape(urlOf("delivery")), "mailroom_jetstream_messages_handled_total", { stream: DELIVERY_STREAM, result: "ack" }), { timeout: 10_000 }).toBe(1);
    const delivery = await scrape(urlOf("delivery"));
    expect(sampleSum(delivery, "mailroom_jetstream_handler_duration_seconds_count", { stream: DELIVERY_STREAM })).toBe(1);
    expect(declares(delivery, "mailroom_jetstream_consumer_pending_messages")).toBe(true);
    expect(declares(delivery, "mailroom_jetstream_redeliveries_total")).toBe(true);
    // Delivery's own counters: one message sent on the transactional lane, one timed send.
    expect(sampleSum(delivery, "mailroom_delivery_messages_total", { lane: "transactional", outcome: "sent" })).toBe(1);
    expect(sampleSum(delivery, "mailroom_delivery_send_duration_seconds_count", { lane: "transactional" })).toBe(1);
  });

  it("serves process metrics from every unit", async () => {
    for (const unit of units) {
      const text = await scrape(urlOf(unit));
      for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_eventloop_lag_p99_seconds", "nodejs_heap_size_used_bytes"]) {
        expect(declares(text, name), `${unit}: ${name}`).toBe(true);
      }
      expect(sampleSum(text, "process_resident_memory_bytes"), unit).toBeGreaterThan(10_000_000);
    }
  });

  it("answers /healthz and /readyz on every unit, naming what readiness checked", async () => {
    // What each unit opens through kit (its NATS connection, its store) is checked without its main.ts saying so.
    const opened: Partial<Record<UnitName, string[]>> = {
      accounts: ["store:accounts"],
      audience: ["store:audience"],
      email: ["nats:email", "store:email"],
      delivery: ["nats:delivery", "store:delivery"],
      inbound: ["nats:inbound", "store:inbound"],
      gateway: ["nats:gateway", "accounts", "audience", "email"],
    };
    for (const unit of units) {
      expect((await fetch(`${urlOf(unit)}/healthz`)).status, unit).toBe(200);
      const ready = await fetch(`${urlOf(unit)}/readyz`);
      const body = (await ready.json()) as { ok: boolean; checks: Record<string, string> };
      expect(ready.status, `${unit}: ${JSON.stringify(body)}`).toBe(200);
      for (const check of opened[unit] ?? []) expect(body.checks[check], `${unit}: ${check}`).toBe("ok");
    }
  });
});
