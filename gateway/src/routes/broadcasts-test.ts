import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  broadcastEnvelope,
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  GATING_RESPONSES,
  parseTestBody,
  testBroadcastRequestSchema,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

/** POST /v1/broadcasts/:id/test { emails } -> { broadcast } (unchanged; the copies are on their way). */
export const registerTestBroadcast: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/test",
    operationId: "sendBroadcastTest",
    tags: ["Broadcasts"],
    summary: "Send test copies to workspace members",
    description: "Compiled as the real send; the subject starts with `[TEST] ` and merge values come from the member's contact when there is one. With an A/B test each member gets every variant instead, marked `[TEST A] `, `[TEST B] ` …. Not counted toward the monthly limit; the status does not change.",
    params: broadcastIdParams,
    body: testBroadcastRequestSchema,
    parseBody: parseTestBody,
    responses: {
      200: { description: "The broadcast, unchanged.", body: broadcastEnvelope },
      400: { description: "`invalid_test_recipients` (not 1–10 valid addresses), `test_recipients_not_members` (with `notMembers`; nothing sent), `invalid_json`.", body: broadcastErrorSchema },
      404: { description: "`broadcast_not_found`.", body: broadcastErrorSchema },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id }, body }) => {
      const res = await deps.clients.broadcast.sendTest({ workspaceId: workspaceOf(request), id, emails: body.emails }, rpcOptions(request));
      return reply.send({ broadcast: broadcastJson(res.broadcast!) });
    },
  });
