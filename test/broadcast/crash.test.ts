import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { startSystem, type TestSystem } from "../harness/system.js";

/**
 * `kill -9` of the broadcast process and of the delivery process in the middle of a
 * broadcast to 2,000 contacts (through the public API, the sink answering slowly): every
 * contact gets the message, duplicates are bounded by what delivery had in flight, and the
 * broadcast still counts each recipient once and COMPLETES.
 *
 * MAILROOM_TEST_HEAVY=1 adds a variant with 20,000 contacts where the broadcast process is
 * killed while it is still releasing windows (its successor waits for the lease, ≤ 60 s).
 */

const CONCURRENCY = 16;
const heavy = process.env.MAILROOM_TEST_HEAVY === "1";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const workspace = (id: string) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }],
  verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
  monthlyLimit: 1_000_000, sendingAccountNew: false,
});

/** Contacts through the audience unit's batch RPC (a bootstrap of 20,000 would hold its start past the harness's wait). */
async function loadContacts(sys: TestSystem, ws: string, n: number): Promise<void> {
  const audience = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  let next = 0;
  const worker = async () => {
    for (let from = (next += 1_000) - 1_000; from < n; from = (next += 1_000) - 1_000) {
      const contacts = Array.from({ length: Math.min(1_000, n - from) }, (_, k) => ({ email: `${ws}.${from + k}@example.test`, firstName: `F${from + k}`, subscribed: true }));
      const res = await audience.batchUpsertContacts({ workspaceId: ws, contacts });
      expect(res.results.filter((r) => !r.ok)).toEqual([]);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

async function crashRun(contacts: number, opts: { killBroadcastWhileReleasing: boolean }) {
  const ws = `ws_crash${contacts}`;
  const sys: TestSystem = await startSystem({
    bootstrap: { workspaces: [workspace(ws)] },
    units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"],
    env: {
      MAILROOM_DELIVERY_CONCURRENCY: String(CONCURRENCY),
      // Broadcast recipients between claim and mark: pages at once × recipients of a page at
      // once. Left at their defaults (16 pages × 8) the bound would be 128, not CONCURRENCY.
      MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: "2",
      MAILROOM_DELIVERY_PAGE_CONCURRENCY: String(CONCURRENCY / 2),
      MAILROOM_SMTP_POOL_SIZE: "4",
      MAILROOM_DELIVERY_ACK_WAIT_MS: "3000",
      MAILROOM_LOG_LEVEL: "warn",
    },
  });
  try {
    await loadContacts(sys, ws, contacts);
    // A relay that takes a moment to answer, so the kills land inside SMTP transactions.
    sys.sink!.setBehaviour(() => ({ kind: "accept", delayMs: 4 }));
    const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: `mr_test_${ws}_1`, body });
    const created = await api("POST", "/v1/broadcasts", {
      name: "crash", subject: "Crash {{firstName}} #crash", fromEmail: "news@acme.test", fromName: "Acme",
      html: "<p>Hi {{firstName}}</p>", audience: { all: true },
    });
    const id = created.body.broadcast.id;
    const progress = async () => (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
    const received = () => sys.sink!.messages.filter((m) => m.raw.includes("#crash"));
    expect((await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" })).status).toBe(200);

    // 1. The broadcast process dies (mid-release in the heavy variant, else while delivery drains).
    let atBroadcastKill = { sent: 0, released: 0 };
    for (let deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) {
      const b = await progress();
      const ready = opts.killBroadcastWhileReleasing ? b.progress.released > 0 : received().length >= contacts * 0.15;
      if (ready) {
        atBroadcastKill = { sent: received().length, released: b.progress.released };
        break;
      }
    }
    await sys.processes.kill("broadcast", "SIGKILL");
    await sys.processes.restart("broadcast");

    // 2. Then the delivery process dies mid-send.
    for (let deadline = Date.now() + 120_000; received().length < Math.max(atBroadcastKill.sent + 50, contacts * 0.4) && Date.now() < deadline;) await sleep(20);
    const atDeliveryKill = received().length;
    await sys.processes.kill("delivery", "SIGKILL");
    await sys.processes.restart("delivery");

    const deadline = Date.now() + 120_000 + (opts.killBroadcastWhileReleasing ? 60_000 : 0);
    let b = await progress();
    while (b.status !== "COMPLETED" && Date.now() < deadline) {
      await sleep(200);
      b = await progress();
    }
    await sleep(1_000); // stragglers
    const mails = received();
    const distinct = new Set(mails.flatMap((m) => m.to));
    const duplicates = mails.length - distinct.size;
    console.info(
      `crash (${contacts} contacts): broadcast killed at ${atBroadcastKill.sent} received / ${atBroadcastKill.released} released, delivery killed at ${atDeliveryKill} received; ` +
        `${distinct.size} distinct recipients, ${duplicates} duplicate(s) (bound: ${CONCURRENCY} in flight); status ${b.status}, progress ${JSON.stringify(b.progress)}`,
    );
    expect(atDeliveryKill).toBeLessThan(contacts); // the kill landed mid-send
    expect(distinct.size).toBe(contacts);
    expect(duplicates).toBeLessThanOrEqual(CONCURRENCY);
    expect(b.status).toBe("COMPLETED");
    expect(b.progress).toMatchObject({ recipients: contacts, released: contacts, sent: contacts, failed: 0 });
  } finally {
    await sys.stop();
  }
}

describe("broadcast and delivery killed mid-send (kill -9)", () => {
  beforeAll(() => undefined);
  afterAll(() => undefined);

  it("2,000 contacts: everyone once, duplicates only from delivery's in-flight messages, COMPLETED", async () => {
    await crashRun(2_000, { killBroadcastWhileReleasing: false });
  }, 120_000);

  it.runIf(heavy)("20,000 contacts, the broadcast process killed while releasing (MAILROOM_TEST_HEAVY=1)", async () => {
    await crashRun(20_000, { killBroadcastWhileReleasing: true });
  }, 400_000);
});
