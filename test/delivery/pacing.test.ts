/**
 * Pacing state shared through JetStream KV: two repositories on two connections stand
 * for two delivery processes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { KvPacingStore } from "../../services/delivery/src/adapters/pacing-kv.js";
import { Pacer } from "../../services/delivery/src/domain/pacer.js";
import { silentLogger } from "../../services/delivery/src/testing.js";

describe("KV pacing across processes", () => {
  let nats: NatsHandle;
  let conns: NatsConnection[];
  let a: KvPacingStore;
  let b: KvPacingStore;

  beforeAll(async () => {
    nats = await startNats();
    conns = await Promise.all([connectNats(nats.url, "pace-a"), connectNats(nats.url, "pace-b")]);
    a = await KvPacingStore.open(conns[0], silentLogger);
    b = await KvPacingStore.open(conns[1], silentLogger);
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    for (const c of conns ?? []) await c.close();
    await nats?.stop();
  });

  const eventually = async (check: () => boolean, ms = 3_000) => {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error("condition not met in time");
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  it("a pause set by one process is seen by the other, and so is the resume", async () => {
    await a.setPaused("cmp_x", true);
    expect(a.isPaused("cmp_x")).toBe(true);
    await eventually(() => b.isPaused("cmp_x"));
    expect(b.pausedBroadcasts()).toEqual(["cmp_x"]);
    await a.setPaused("cmp_x", false);
    await eventually(() => !b.isPaused("cmp_x"));
  });

  it("a process that starts later sees pauses and rates set before it", async () => {
    await a.setPaused("cmp_early", true);
    await a.setWorkspaceRate("ws_early", 7);
    const late = await KvPacingStore.open(conns[1], silentLogger);
    expect(late.isPaused("cmp_early")).toBe(true);
    expect(late.workspaceRate("ws_early")).toBe(7);
    await late.close();
  });

  it("one workspace rate holds across both processes together", async () => {
    const rate = 40;
    await a.setWorkspaceRate("ws_shared", rate);
    await eventually(() => b.workspaceRate("ws_shared") === rate);
    const pacers = [new Pacer(a, { key: "r", rate: 0 }), new Pacer(b, { key: "r", rate: 0 })];
    const sent = [0, 0];
    const until = Date.now() + 1_000;
    await Promise.all(
      pacers.map(async (p, i) => {
        while (Date.now() < until) {
          const wait = await p.acquire("ws_shared");
          if (wait === 0) sent[i] += 1;
          else await new Promise((r) => setTimeout(r, wait));
        }
      }),
    );
    const total = sent[0] + sent[1];
    // One second at 40/s plus the initial burst (40): never the 160 two private buckets would allow.
    expect(total).toBeLessThanOrEqual(rate * 2 + 5);
    expect(total).toBeGreaterThanOrEqual(rate);
    expect(sent[0]).toBeGreaterThan(0);
    expect(sent[1]).toBeGreaterThan(0);
  });
});
