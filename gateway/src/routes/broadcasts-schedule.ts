import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { parseSendAt } from "../schemas/email.js";
import { invalid } from "@mailroom/http/errors.js";
import { defineRoute, type RouteModule } from "./route.js";
import { assertCleanCheck } from "./pre-send-check.js";
import {
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  GATING_RESPONSES,
  methodOf,
  scheduleBroadcastRequestSchema,
  scheduleBroadcastResponseSchema,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

/** `{ sendAt?, deliveryMethod? }`, `{}` or no body at all. */
function parseScheduleBody(raw: unknown) {
  const parsed = scheduleBroadcastRequestSchema.safeParse(raw ?? {});
  if (!parsed.success) throw refusal({ ...invalid(parsed.error), code: "invalid_payload" });
  const { sendAt, deliveryMethod, requireCleanCheck } = parsed.data;
  let at: Date | undefined;
  if (sendAt) {
    at = parseSendAt(sendAt);
    if (!at) throw refusal({ code: "invalid_send_at", message: `sendAt must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T09:30:00Z; got ${JSON.stringify(sendAt.slice(0, 64))}` });
  }
  return { sendAt: at, deliveryMethod: deliveryMethod ?? undefined, requireCleanCheck: requireCleanCheck === true };
}

/** POST /v1/broadcasts/:id/schedule -> { broadcast, warnings? }: DRAFT -> SCHEDULED, content locked. */
export const registerScheduleBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/schedule",
    operationId: "scheduleBroadcast",
    tags: ["Broadcasts"],
    summary: "Schedule a draft (or send it now)",
    description: "Compiles and locks the content (tracking links, unsubscribe footer), checks the audience against this month's usage left, and answers `SCHEDULED`; without a future `sendAt` it becomes `IN_PROGRESS` within a second.",
    params: broadcastIdParams,
    requestContent: { required: false, content: { "application/json": scheduleBroadcastRequestSchema } },
    parseBody: parseScheduleBody,
    responses: {
      200: { description: "The SCHEDULED broadcast; `warnings` when its HTML is over 102 KB.", body: scheduleBroadcastResponseSchema },
      400: {
        description: "`invalid_payload` (a deliveryMethod other than ASAP, PROGRESSIVE, SMART, WARMUP, OPTIMAL), `invalid_send_at`, `send_at_out_of_range` (over 90 days), `campaigns/delivery_method_not_available` (a new sending account may only WARMUP), `campaigns/invalid_from_email`, `invalid_json`.",
        body: broadcastErrorSchema,
      },
      403: { description: "`monthly_limit_reached` (the audience is larger than this month's usage left; nothing queued), or the gating: `broadcast_api_not_enabled`, `broadcast_api_workspace_not_verified`.", body: broadcastErrorSchema },
      404: { description: "`broadcast_not_found`.", body: broadcastErrorSchema },
      409: { description: "`broadcast_not_schedulable`: only a DRAFT can be scheduled; `check_failed` (with `requireCleanCheck`): the pre-send check found errors, listed in `errors`.", body: broadcastErrorSchema },
      402: GATING_RESPONSES[402],
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id }, body }) => {
      if (body.requireCleanCheck) await assertCleanCheck(deps, request, id);
      const res = await deps.clients.broadcast.scheduleBroadcast(
        {
          workspaceId: workspaceOf(request),
          id,
          sendAt: body.sendAt ? timestampFromDate(body.sendAt) : undefined,
          deliveryMethod: body.deliveryMethod ? methodOf(body.deliveryMethod) : undefined,
        },
        rpcOptions(request),
      );
      return reply.send({ broadcast: broadcastJson(res.broadcast!), ...(res.warnings.length ? { warnings: res.warnings } : {}) });
    },
  });
