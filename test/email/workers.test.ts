import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSystem, type TestSystem } from "../harness/system.js";
import { sampleSum, scrape } from "../ops/prometheus.js";

/**
 * The email service as two worker processes on one port (MAILROOM_EMAIL_WORKERS=2), with
 * the real gateway, accounts, audience, renderer, delivery, nats-server and SMTP sink: concurrent
 * sends are all accepted once and delivered once, /metrics counts every worker, and a
 * worker that dies is replaced while the port keeps answering.
 */

const KEY = "mr_test_workers_key_1";
const sendBody = (i: number) => ({ from: "Acme <team@acme.test>", to: `reader${i}@example.test`, subject: `Worker ${i}`, html: `<p>${i}</p>` });

/** Pids of the processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return children ? children.split(" ").map(Number) : [];
}

describe("the email service as several workers", () => {
  let sys: TestSystem;
  const emailUnit = () => sys.processes.units.find((u) => u.name === "email")!;

  beforeAll(async () => {
    sys = await startSystem({
      bootstrap: {
        workspaces: [{
          id: "ws_workers", name: "Workers", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          monthlyLimit: 10_000, sendingAccountNew: false,
        }],
      },
      env: { MAILROOM_EMAIL_WORKERS: "2" },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("accepts concurrent sends through both workers, delivers each once, and counts them all in /metrics", async () => {
    expect(childrenOf(emailUnit().child.pid!)).toHaveLength(2);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => sys.api("POST", "/v1/emails", { key: KEY, body: sendBody(i) })));
    expect(answers.filter((a) => a.status !== 200).map((a) => a.body)).toEqual([]);
    expect(new Set(answers.map((a) => a.body.email.id as string)).size).toBe(60);

    const received = await sys.sink!.waitFor(60, 60_000);
    const recipients = received.flatMap((m) => m.to).sort();
    expect(recipients).toEqual(Array.from({ length: 60 }, (_, i) => `reader${i}@example.test`).sort());

    // Whichever worker answers the scrape, the counts are the sum over both: every email was
    // inserted once, by one worker or the other.
    const metrics = await scrape(`http://127.0.0.1:${sys.ports.email}`);
    expect(sampleSum(metrics, "mailroom_store_operation_duration_seconds_count", { collection: "emails", op: "insertOne" })).toBe(60);
    const gateway = await scrape(sys.gatewayUrl);
    expect(sampleSum(gateway, "mailroom_http_requests_total", { route: "/v1/emails", status: "200" })).toBe(60);
  }, 120_000);

  it("replaces a worker that dies, and the port keeps answering meanwhile", async () => {
    const primary = emailUnit().child.pid!;
    const [victim, survivor] = childrenOf(primary);
    process.kill(victim!, "SIGKILL");
    // The survivor serves while the replacement starts (a call the gateway had pooled on the
    // dead worker's connection fails with 503, as any call to a crashed process does).
    const during: number[] = [];
    for (let i = 0; i < 5 && !during.includes(200); i++) during.push((await sys.api("POST", "/v1/emails", { key: KEY, body: sendBody(100 + i) })).status);
    expect(during).toContain(200);
    expect(during.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    const deadline = Date.now() + 30_000;
    let workers = childrenOf(primary);
    while ((workers.length < 2 || workers.includes(victim!)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      workers = childrenOf(primary);
    }
    expect(workers).toHaveLength(2);
    expect(workers).toContain(survivor);
    expect(workers).not.toContain(victim);
    const after = await Promise.all(Array.from({ length: 10 }, (_, i) => sys.api("POST", "/v1/emails", { key: KEY, body: sendBody(200 + i) })));
    expect(after.map((a) => a.status)).toEqual(Array(10).fill(200));
  }, 60_000);
});
