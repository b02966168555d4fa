import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { BroadcastService, BroadcastStatus, DeliveryMethod } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { broadcastEventOf } from "./consumers.js";
import { broadcastRoutes } from "./routes.js";
import { buildTestWorld } from "./testing.js";

const WS = "ws_acme";
const input = {
  workspaceId: WS,
  name: "n",
  subject: "s {{firstName}}",
  fromEmail: "news@acme.test",
  fromName: "Acme",
  html: "<p>x</p>",
  audience: { all: true },
  replyTo: ["help@acme.test"],
};

describe("Connect routes", () => {
  it("maps proto to the domain and back, every field and counter", async () => {
    const w = await buildTestWorld();
    const client = createClient(BroadcastService, memoryTransport(broadcastRoutes(w.service)));
    const created = await client.createBroadcast({ ...input, settings: { trackOpens: false } });
    expect(created.variables).toMatchObject({ detected: ["firstName"], unknown: [] });
    expect(created.broadcast).toMatchObject({ status: BroadcastStatus.DRAFT, replyTo: ["help@acme.test"], settings: { trackOpens: false, trackClicks: true }, audience: { all: true } });
    expect(created.broadcast!.createdAt).toBeDefined();
    const id = created.broadcast!.id;
    const scheduled = await client.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.SMART });
    expect(scheduled.broadcast).toMatchObject({ status: BroadcastStatus.SCHEDULED, deliveryMethod: DeliveryMethod.SMART });
    expect(scheduled.broadcast!.progress).toMatchObject({ recipients: 0n, released: 0n, opened: 0n });
    const listed = await client.listBroadcasts({ workspaceId: WS, status: BroadcastStatus.SCHEDULED });
    expect(listed.broadcasts.map((b) => b.id)).toEqual([id]);
  });

  it("serves the console's update, preview and timeline", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1);
    const client = createClient(BroadcastService, memoryTransport(broadcastRoutes(w.service)));
    const { broadcast } = await client.createBroadcast(input);
    const id = broadcast!.id;
    const updated = await client.updateBroadcast({ ...input, id, name: "v2", subject: "Hi {{plan}}", settings: { trackClicks: false } });
    expect(updated.broadcast).toMatchObject({ id, name: "v2", subject: "Hi {{plan}}", settings: { trackOpens: true, trackClicks: false } });
    expect(updated.variables?.detected).toEqual(["plan"]);
    expect(await client.previewBroadcast({ workspaceId: WS, id, contactEmail: "c0@example.test" })).toMatchObject({ subject: "Hi pro", contactFound: true });
    await client.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.ASAP });
    const sender = w.sender();
    while ((await sender.tick()) > 0);
    await w.settleAll(id, "sent");
    const { points } = await client.getBroadcastTimeline({ workspaceId: WS, id });
    expect(points).toHaveLength(1);
    expect(points[0]).toMatchObject({ sent: 1n, delivered: 1n, opened: 0n });
    expect(points[0].at!.seconds % 60n).toBe(0n);
    const info = errorInfoOf(await client.updateBroadcast({ ...input, id }).then(() => undefined, (e) => e));
    expect(info).toMatchObject({ code: "broadcast_not_editable", httpStatus: 409 });
  });

  it("answers domain refusals as ErrorInfo and refuses unknown enum values", async () => {
    const w = await buildTestWorld();
    const client = createClient(BroadcastService, memoryTransport(broadcastRoutes(w.service)));
    const info = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e));
    expect(await info(client.createBroadcast({ ...input, html: "{{nope}}" }))).toMatchObject({ code: "broadcast_unknown_variables", httpStatus: 400, unknownVariables: ["nope"] });
    expect(await info(client.listBroadcasts({ workspaceId: WS, status: 42 as BroadcastStatus }))).toMatchObject({ code: "invalid_payload" });
    const { broadcast } = await client.createBroadcast(input);
    expect(await info(client.scheduleBroadcast({ workspaceId: WS, id: broadcast!.id, deliveryMethod: 9 as DeliveryMethod }))).toMatchObject({ code: "invalid_payload" });
  });
});

describe("events consumer mapping", () => {
  it("keeps the kinds the broadcast counts and drops the rest", () => {
    const ev = (type: MailEventType, broadcastId = "cmp_1") => broadcastEventOf(create(MailEventSchema, { type, broadcastId, deliveryId: "cmp_1.ctc_1" }));
    expect(ev(MailEventType.SENT)).toMatchObject({ kind: "sent", broadcastId: "cmp_1", deliveryId: "cmp_1.ctc_1" });
    expect(ev(MailEventType.UNSUBSCRIBED)?.kind).toBe("unsubscribed");
    expect(ev(MailEventType.COMPLAINED)).toBeUndefined();
    expect(ev(MailEventType.SENT, "")).toBeUndefined();
  });
});
