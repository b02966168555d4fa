/**
 * DESIGN §9.1, recovery within the ack wait: the real system (every unit it needs a process,
 * the default ack wait), 300 transactional emails accepted through the public API, the
 * delivery process killed with SIGKILL while they go out and started again. Every email
 * reaches the SMTP sink within 45 s of the restart (the killed process's jobs come back
 * after at most the 30 s ack wait, not after two SMTP timeouts), and none is sent twice
 * beyond what was inside an SMTP transaction when the process died.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSystem, type TestSystem } from "../harness/system.js";
import { headerOf } from "./support.js";

const KEY = "mr_test_kill_recovery_1";
const EMAILS = 300;
/** Jobs one delivery process handles at once: the bound on duplicates. */
const CONCURRENCY = 16;

describe("delivery killed (SIGKILL) during 300 accepted transactional emails", () => {
  let sys: TestSystem;

  beforeAll(async () => {
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_kill", name: "Kill", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 100_000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "email", "delivery", "gateway"],
      // The default ack wait (30 s) on purpose; a small pool so the sends take a while.
      env: { MAILROOM_LOG_LEVEL: "warn", MAILROOM_DELIVERY_CONCURRENCY: String(CONCURRENCY), MAILROOM_SMTP_POOL_SIZE: "4" },
    });
    // A relay that takes a moment per message, so the kill lands inside SMTP transactions.
    sys.sink!.setBehaviour(() => ({ kind: "accept", delayMs: 40 }));
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("delivers all 300 within 45 s of the restart, duplicating at most what was in flight", async () => {
    const sink = sys.sink!;
    const accepted: string[] = [];
    // Accepted through the public API, 25 requests at a time.
    for (let start = 0; start < EMAILS; start += 25) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(25, EMAILS - start) }, (_, k) =>
          sys.api("POST", "/v1/emails", {
            key: KEY,
            body: { from: "Acme <team@acme.test>", to: `k${start + k}@example.test`, subject: `Kill ${start + k}`, html: `<p>Message ${start + k}</p>` },
          }),
        ),
      );
      for (const res of batch) {
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        accepted.push(res.body.email.id);
      }
    }
    expect(new Set(accepted).size).toBe(EMAILS);

    await sink.waitFor(40, 30_000);
    await sys.processes.kill("delivery", "SIGKILL");
    const atKill = sink.messages.length;
    expect(atKill, "the kill landed while the emails were being delivered").toBeLessThan(EMAILS);

    await sys.processes.restart("delivery");
    const restartedAt = Date.now();
    const distinct = () => new Set(sink.messages.map((m) => headerOf(m.raw, "X-Mailroom-Delivery-Id"))).size;
    while (distinct() < EMAILS && Date.now() - restartedAt < 45_000) await new Promise((r) => setTimeout(r, 200));
    const took = Date.now() - restartedAt;
    expect(distinct(), `delivered ${distinct()}/${EMAILS} within 45 s of the restart\n${await sys.log("delivery")}`).toBe(EMAILS);

    // Let straggling redeliveries settle, then count duplicates.
    await new Promise((r) => setTimeout(r, 1_000));
    const duplicates = sink.messages.length - EMAILS;
    console.info(`killed after ${atKill}/${EMAILS}; all delivered ${(took / 1000).toFixed(1)} s after the restart; ${duplicates} duplicate(s) (bound: ${CONCURRENCY} in flight)`);
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(duplicates).toBeLessThanOrEqual(CONCURRENCY);

    // Every email is delivered as the API reports it too (the outcome events went out).
    const undelivered = async () => {
      const left: string[] = [];
      for (let i = 0; i < accepted.length; i += 50) {
        const got = await Promise.all(accepted.slice(i, i + 50).map((id) => sys.api("GET", `/v1/emails/${id}`, { key: KEY })));
        got.forEach((res, k) => {
          if (!res.body?.email?.events?.deliveredAt) left.push(accepted[i + k]);
        });
      }
      return left;
    };
    await expect.poll(async () => (await undelivered()).length, { timeout: 20_000, interval: 1_000 }).toBe(0);
  }, 240_000);
});
