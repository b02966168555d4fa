import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { BroadcastService, BroadcastStatus, DeliveryMethod } from "../../../gen/mailroom/broadcast/v1/broadcast_pb.js";
import { MailEventSchema, MailEventType } from "../../../gen/mailroom/events/v1/events_pb.js";
import { memoryTransport } from "../../kit/src/connect.js";
import { errorInfoOf } from "../../kit/src/errors.js";
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
    expect((await client.getCompiledContent({ workspaceId: WS, id })).compiled).toBeDefined();
  });

  it("answers domain refusals as ErrorInfo and refuses unknown enum values", async () => {
    const w = await buildTestWorld();
    const client = createClient(BroadcastService, memoryTransport(broadcastRoutes(w.service)));
    const info = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e));
    expect(await info(client.createBroadcast({ ...input, html: "{{nope}}" }))).toMatchObject({ code: "broadcast_unknown_variables", httpStatus: 400, unknownVariables: ["nope"] });
    expect(await info(client.listBroadcasts({ workspaceId: WS, status: 42 as BroadcastStatus }))).toMatchObject({ code: "invalid_payload" });
    const { broadcast } = await client.createBroadcast(input);
    expect(await info(client.scheduleBroadcast({ workspaceId: WS, id: broadcast!.id, deliveryMethod: 9 as DeliveryMethod }))).toMatchObject({ code: "invalid_payload" });
    expect(await info(client.getCompiledContent({ workspaceId: WS, id: broadcast!.id }))).toMatchObject({ code: "broadcast_not_found", httpStatus: 404 });
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
