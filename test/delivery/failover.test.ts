/**
 * Delivery routes (DESIGN §9.7) against a real nats-server, real SMTP relays on loopback and
 * the delivery service as main.ts wires it from MAILROOM_DELIVERY_ROUTES: two relays share
 * the traffic, one is cut mid-stream (its listener closed, its connections destroyed), and
 * every email still arrives — on the other — exactly once, but for what was in flight at the
 * cut; each event names the route that carried it. A broadcast-only route never sees
 * transactional mail; a workspace's own route carries that workspace's mail and nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { startNats, type NatsHandle } from "../harness/nats.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { DeliverySource, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import type { CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compiledFrom } from "../../services/delivery/src/testing.js";
import { deliveryEnv, listenEvents, publishJob, putContents, startDeliveryUnderTest, startNeighbours, tempDir, type Neighbours } from "./support.js";
import { startRelaySink, type RelaySink } from "./failover-support.js";

const EMAILS = 300;
const CUT_AFTER = 60;
const POOL_SIZE = 4;

describe("delivery routes: failover, lanes, workspaces", () => {
  let nats: NatsHandle;
  let neighbours: Neighbours;
  let nc: NatsConnection;
  let data: Awaited<ReturnType<typeof tempDir>>;
  let events: ReturnType<typeof listenEvents>;
  let delivery: Awaited<ReturnType<typeof startDeliveryUnderTest>>;
  const sinks: Record<"east" | "west" | "bulk" | "vip", RelaySink> = {} as never;

  beforeAll(async () => {
    [nats, neighbours, data, sinks.east, sinks.west, sinks.bulk, sinks.vip] = await Promise.all([
      startNats(), startNeighbours(), tempDir("mailroom-failover-"),
      startRelaySink({ holdMs: 15 }), startRelaySink({ holdMs: 15 }), startRelaySink(), startRelaySink(),
    ]);
    const contents = new Map<string, CompiledMessage>();
    for (const ws of ["ws_acme", "ws_vip"]) {
      contents.set(`${ws}/email:trs_1`, compiledFrom({ subject: "Hi {{firstName}}", html: "<p>Hello {{firstName}}</p>", workspaceId: ws }));
      contents.set(`${ws}/broadcast:cmp_1`, compiledFrom({ subject: "News", html: "<p>News for {{firstName}}</p>", broadcast: true, workspaceId: ws }));
      neighbours.senders.set(`${ws}/news@acme.test`, { address: "news@acme.test" });
    }
    nc = await connectNats(nats.url, "failover-suite");
    await ensureMailStreams(nc);
    await putContents(nc, contents);
    events = listenEvents(nc);
    const routes = [
      { name: "east", url: sinks.east.url, weight: 1 },
      { name: "west", url: sinks.west.url, weight: 1 },
      { name: "bulk", url: sinks.bulk.url, weight: 1, lanes: ["broadcast"] },
      { name: "vip", url: sinks.vip.url, workspaces: ["ws_vip"] },
    ];
    delivery = await startDeliveryUnderTest(
      nc,
      deliveryEnv({
        natsUrl: nats.url, dataDir: data.dir, neighboursUrl: neighbours.url,
        extra: {
          MAILROOM_DELIVERY_ROUTES: JSON.stringify(routes),
          MAILROOM_SMTP_POOL_SIZE: String(POOL_SIZE),
          MAILROOM_DELIVERY_CONCURRENCY: "16",
          MAILROOM_DELIVERY_BROADCAST_CONCURRENCY: "16",
          // West stays down for the rest of the suite once cut.
          MAILROOM_DELIVERY_ROUTE_DOWN_MS: "600000",
        },
      }),
    );
  });

  afterAll(async () => {
    await delivery?.stop();
    events?.stop();
    await nc?.close();
    await Promise.all([nats?.stop(), neighbours?.stop(), ...Object.values(sinks).map((s) => s?.stop())]);
    await data?.remove();
  });

  const until = async (check: () => boolean, timeoutMs: number, what: string) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const deliveryIdOf = (messageId: string) => messageId.split("@")[0];
  const sentEvents = (prefix: string) => {
    const byId = new Map<string, MailEvent>();
    for (const e of events.events) if (e.type === MailEventType.SENT && e.deliveryId.startsWith(prefix)) byId.set(e.deliveryId, e);
    return byId;
  };
  const copies = (sink: RelaySink, prefix: string) => sink.received.map(deliveryIdOf).filter((id) => id.startsWith(prefix));

  it(`delivers ${EMAILS} emails across two relays, one cut mid-stream, nothing lost, duplicates only from what was in flight`, async () => {
    const ids = Array.from({ length: EMAILS }, (_, i) => `dlv_fo_${i}`);
    const publishing = (async () => {
      for (const id of ids) await publishJob(nc, { deliveryId: id, to: `${id}@example.test` });
    })();
    await until(() => copies(sinks.west, "dlv_fo_").length >= CUT_AFTER, 30_000, `west relay received ${CUT_AFTER}`);
    await sinks.west.cut();
    const westAtCut = copies(sinks.west, "dlv_fo_").length;
    await publishing;

    await until(() => sentEvents("dlv_fo_").size === EMAILS, 60_000, `SENT for all ${EMAILS}`);
    const east = copies(sinks.east, "dlv_fo_");
    const west = copies(sinks.west, "dlv_fo_");
    expect(west.length).toBe(westAtCut); // nothing reached west after the cut
    expect(east.length).toBeGreaterThan(EMAILS / 2); // the rest moved to east

    // Nothing lost: every email arrived somewhere.
    const arrived = new Map<string, number>();
    for (const id of [...east, ...west]) arrived.set(id, (arrived.get(id) ?? 0) + 1);
    expect(ids.filter((id) => !arrived.has(id))).toEqual([]);
    // Duplicates: at most the messages west had taken in but not yet answered when cut.
    const duplicates = [...arrived].filter(([, n]) => n > 1).map(([id]) => id);
    expect(duplicates.length).toBeLessThanOrEqual(sinks.west.inFlightAtCut);
    // East got each at most once (a message answered 250 is never sent again).
    expect(new Set(east).size).toBe(east.length);

    // Each SENT event names the route whose relay answered 250 (east for any duplicate).
    for (const [id, e] of sentEvents("dlv_fo_")) {
      expect(["east", "west"]).toContain(e.route);
      expect((e.route === "east" ? east : west).includes(id), `${id} on ${e.route}`).toBe(true);
    }
    expect([...sentEvents("dlv_fo_").values()].filter((e) => e.route === "west").length).toBeGreaterThan(0);
    // Transactional mail never went to the broadcast-only route, ws_acme's never to ws_vip's.
    expect(copies(sinks.bulk, "dlv_fo_")).toEqual([]);
    expect(copies(sinks.vip, "dlv_fo_")).toEqual([]);

    // The admin status shows west down with why, east up.
    const status = await delivery.client.getStatus({});
    expect(status.mode).toBe("relay");
    const byName = new Map(status.routes.map((r) => [r.name, r]));
    expect([...byName.keys()]).toEqual(["east", "west", "bulk", "vip"]);
    expect(byName.get("west")).toMatchObject({ kind: "relay", target: sinks.west.url, down: true });
    expect(byName.get("west")!.lastError).not.toBe("");
    expect(byName.get("west")!.downUntil).toBeDefined();
    expect(byName.get("east")).toMatchObject({ down: false, weight: 1, lanes: [], workspaces: [] });
    expect(Number(byName.get("east")!.sentTotal)).toBe([...sentEvents("dlv_fo_").values()].filter((e) => e.route === "east").length);
    expect(byName.get("bulk")!.lanes).toEqual(["broadcast"]);
    expect(byName.get("vip")!.workspaces).toEqual(["ws_vip"]);
  }, 120_000);

  it("carries broadcast mail on the broadcast-only route and the shared ones, a reserved workspace's mail only on its own route", async () => {
    const broadcast = Array.from({ length: 40 }, (_, i) => `dlv_bc_${i}`);
    for (const id of broadcast) {
      await publishJob(nc, { deliveryId: id, to: `${id}@example.test`, source: DeliverySource.BROADCAST, broadcastId: "cmp_1", contentRef: "broadcast:cmp_1" });
    }
    const vip = Array.from({ length: 10 }, (_, i) => `dlv_vip_${i}`);
    for (const [i, id] of vip.entries()) {
      const bc = i % 2 === 0;
      await publishJob(nc, {
        deliveryId: id, to: `${id}@example.test`, workspaceId: "ws_vip",
        ...(bc ? { source: DeliverySource.BROADCAST, broadcastId: "cmp_1", contentRef: "broadcast:cmp_1" } : {}),
      });
    }
    await until(() => sentEvents("dlv_bc_").size === broadcast.length && sentEvents("dlv_vip_").size === vip.length, 30_000, "broadcast and vip mail sent");

    // West is down: broadcast mail went to bulk and east, each once, each event naming its route.
    const bulk = copies(sinks.bulk, "dlv_bc_");
    const east = copies(sinks.east, "dlv_bc_");
    expect([...bulk, ...east].sort()).toEqual([...broadcast].sort());
    expect(bulk.length).toBeGreaterThan(0);
    for (const [id, e] of sentEvents("dlv_bc_")) expect((e.route === "bulk" ? bulk : east).includes(id)).toBe(true);

    // ws_vip's mail, both lanes, only on vip; vip carried nothing else.
    expect(copies(sinks.vip, "dlv_vip_").sort()).toEqual([...vip].sort());
    expect(sinks.vip.received.map(deliveryIdOf).every((id) => id.startsWith("dlv_vip_"))).toBe(true);
    expect([...sentEvents("dlv_vip_").values()].every((e) => e.route === "vip")).toBe(true);
    // The broadcast-only route saw no transactional mail at all.
    expect(sinks.bulk.received.map(deliveryIdOf).every((id) => id.startsWith("dlv_bc_"))).toBe(true);
  }, 60_000);
});
