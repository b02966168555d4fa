import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  CapturedMessageSchema,
  DeliveryService,
  GetStatusResponseSchema,
  RouteStatusSchema,
  WorkspaceRateSchema,
} from "@mailroom/proto/delivery/v1/delivery_pb.js";
import type { DeliveryAdmin, RouteStatus } from "./domain/admin.js";
import type { CapturedEntry } from "./domain/ports.js";

const captured = (e: CapturedEntry) =>
  create(CapturedMessageSchema, {
    id: e.id,
    messageId: e.messageId,
    from: e.from,
    to: e.to,
    subject: e.subject,
    capturedAt: timestampFromDate(new Date(e.capturedAt)),
    size: BigInt(e.size),
    deliveryId: e.deliveryId,
    workspaceId: e.workspaceId,
  });

const routeStatus = (r: RouteStatus) =>
  create(RouteStatusSchema, {
    name: r.name,
    kind: r.kind,
    target: r.target,
    weight: r.weight,
    lanes: r.lanes,
    workspaces: r.workspaces,
    provider: r.provider,
    down: r.down,
    downUntil: r.downUntil ? timestampFromDate(r.downUntil) : undefined,
    lastError: r.lastError,
    sentTotal: BigInt(r.sent),
    deferredTotal: BigInt(r.deferred),
    bouncedTotal: BigInt(r.bounced),
    failedTotal: BigInt(r.failed),
    latencyMs: r.latencyMs,
  });

export function deliveryRoutes(admin: DeliveryAdmin) {
  return (router: ConnectRouter) =>
    router.service(DeliveryService, {
      async getStatus() {
        const s = admin.status();
        return create(GetStatusResponseSchema, {
          relay: s.relay,
          capturing: s.capturing,
          inFlight: BigInt(s.counters.inFlight),
          sentTotal: BigInt(s.counters.sent),
          failedTotal: BigInt(s.counters.failed),
          deferredTotal: BigInt(s.counters.deferred),
          bouncedTotal: BigInt(s.counters.bounced),
          pausedBroadcasts: s.pausedBroadcasts,
          workspaceRates: s.workspaceRates.map((r) => create(WorkspaceRateSchema, r)),
          relayMessagesPerSecond: s.relayMessagesPerSecond,
          processId: s.processId,
          routes: s.routes.map(routeStatus),
          mode: s.mode,
          ehloName: s.ehloName,
          localAddress: s.localAddress,
        });
      },
      async pauseBroadcast(req) {
        await admin.pauseBroadcast(req.broadcastId);
        return {};
      },
      async resumeBroadcast(req) {
        await admin.resumeBroadcast(req.broadcastId);
        return {};
      },
      async setWorkspaceRate(req) {
        await admin.setWorkspaceRate(req.workspaceId, req.messagesPerSecond);
        return {};
      },
      async listCapturedMessages(req) {
        const list = await admin.listCaptured(req.limit, req.workspaceId, req.query, req.cursor);
        return { messages: list.entries.map(captured), nextCursor: list.nextCursor };
      },
      async clearCapturedMessages() {
        return { cleared: BigInt(await admin.clearCaptured()) };
      },
      async getCapturedMessage(req) {
        const found = await admin.getCaptured(req.id);
        return { message: captured(found.entry), raw: new Uint8Array(found.raw), html: found.html, text: found.text };
      },
    });
}
