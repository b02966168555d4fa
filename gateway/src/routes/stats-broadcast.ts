import { z } from "zod";
import { BroadcastStatus } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { broadcastStatsSchema, ratesOf } from "./stats-schema.js";

/** GET /v1/broadcasts/:id/stats -> { stats }: the broadcast's progress counters and rates. */
export const registerBroadcastStats: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/broadcasts/:id/stats",
    operationId: "getBroadcastStats",
    tags: ["Stats"],
    summary: "Outcomes of one broadcast",
    description: "The broadcast's progress counters (as sending goes on) with rates relative to `sent`.",
    params: z.object({ id: z.string().meta({ description: "A broadcast id (`cmp_…`)." }) }),
    responses: {
      200: { description: "The counters.", body: broadcastStatsSchema },
      402: { description: "`broadcast_api_addon_required`.", body: apiErrorSchema },
      403: { description: "`broadcast_api_not_enabled` or `broadcast_api_workspace_not_verified`.", body: apiErrorSchema },
      404: { description: "`broadcast_not_found` (also for another workspace's broadcast).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params: { id } }) => {
      const res = await deps.clients.broadcast.getBroadcast({ workspaceId: workspaceOf(request), id }, rpcOptions(request));
      const b = res.broadcast!;
      const p = b.progress;
      const n = (v: bigint | undefined) => Number(v ?? 0n);
      const counts = {
        recipients: n(p?.recipients),
        released: n(p?.released),
        sent: n(p?.sent),
        delivered: n(p?.delivered),
        bounced: n(p?.bounced),
        failed: n(p?.failed),
        suppressed: n(p?.suppressed),
        deferred: n(p?.deferred),
        opened: n(p?.opened),
        clicked: n(p?.clicked),
        unsubscribed: n(p?.unsubscribed),
        replied: n(p?.replied),
      };
      const status = BroadcastStatus[b.status] === "UNSPECIFIED" ? "DRAFT" : BroadcastStatus[b.status];
      return reply.send({ stats: { broadcastId: b.id, status, ...counts, rates: ratesOf(counts) } });
    },
  });
