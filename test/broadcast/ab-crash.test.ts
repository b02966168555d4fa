import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSystem, type TestSystem } from "../harness/system.js";

/**
 * `kill -9` of the broadcast unit while an A/B test waits for its winner (DESIGN §9.8): the
 * wait and the split live in the store, so the restarted unit picks the winner when the wait
 * ends and sends it to the rest, each contact exactly once, and the test share is not sent again.
 */

const AUDIENCE = 300;
const WAIT_S = 12;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ws = "ws_abcrash";
const bootstrap = {
  workspaces: [
    {
      id: ws, name: ws, timezone: "UTC",
      apiKeys: [{ key: `mr_test_${ws}_1`, scopes: ["api_user"] }],
      verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
      contacts: Array.from({ length: AUDIENCE }, (_, i) => ({ email: `c${i}@example.test`, firstName: `F${i}`, subscribed: true })),
    },
  ],
};

describe("A/B test: kill -9 of the broadcast unit during the wait", () => {
  let sys: TestSystem;
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: `mr_test_${ws}_1`, body });

  async function until<T>(what: string, read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last = await read();
    while (!done(last)) {
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(last).slice(0, 800)}\n${await sys.log("broadcast")}`);
      await sleep(100);
      last = await read();
    }
    return last;
  }

  beforeAll(async () => {
    sys = await startSystem({
      bootstrap,
      units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"],
      env: { MAILROOM_AB_MIN_WAIT_SECONDS: "5", MAILROOM_LOG_LEVEL: "warn" },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("the restarted unit sends the winner to the rest exactly once", async () => {
    const created = await api("POST", "/v1/broadcasts", {
      name: "crash", subject: "Base #abcrash", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<p>Hi {{firstName}}</p>", audience: { all: true },
      abTest: { variants: [{ subject: "One {{firstName}} #abcrash" }, { subject: "Two {{firstName}} #abcrash" }], testShare: 0.2, metric: "clicks", waitFor: WAIT_S },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id;
    const get = async () => (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
    expect((await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" })).status).toBe(200);
    const received = () => sys.sink!.messages.filter((m) => m.raw.includes("#abcrash"));

    const waiting = await until("waiting for the winner", get, (b) => b.abTest?.state === "waiting");
    const testShare = waiting.abTest.variants[0].recipients + waiting.abTest.variants[1].recipients;
    expect(testShare).toBeGreaterThan(0);
    await until("the test share arrives", received, (m) => m.length >= testShare, 30_000);
    const testTo = new Set(received().flatMap((m) => m.to));

    // Inside the wait: the unit dies without a word and comes back.
    expect(Date.now()).toBeLessThan(Date.parse(waiting.abTest.waitUntil));
    await sys.processes.kill("broadcast", "SIGKILL");
    await sleep(1_000);
    expect(received().length).toBe(testShare);
    await sys.processes.restart("broadcast");

    // No clicks: a tie at 0, so the first variant wins when the wait ends.
    const done = await until("COMPLETED after the restart", get, (b) => b.status === "COMPLETED", 120_000);
    expect(done.abTest).toMatchObject({ state: "decided", winner: 0, winnerChosenBy: "metric" });
    expect(Date.parse(done.abTest.winnerChosenAt)).toBeGreaterThanOrEqual(Date.parse(waiting.abTest.waitUntil));
    await sleep(2_000); // a second copy of anything would show now
    const all = received();
    const to = all.flatMap((m) => m.to);
    expect(to.length).toBe(AUDIENCE);
    expect(new Set(to).size).toBe(AUDIENCE);
    const rest = all.filter((m) => !m.to.some((a) => testTo.has(a)));
    expect(rest.length).toBe(AUDIENCE - testShare);
    expect(rest.every((m) => m.raw.includes("One F"))).toBe(true);
    expect(done.progress).toMatchObject({ recipients: AUDIENCE, released: AUDIENCE, sent: AUDIENCE });
  }, 240_000);
});
