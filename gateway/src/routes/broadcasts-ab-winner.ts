import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import {
  abWinnerRequestSchema,
  broadcastEnvelope,
  broadcastErrorSchema,
  broadcastIdParams,
  broadcastJson,
  GATING_RESPONSES,
  UNAUTHORIZED_RESPONSE,
} from "@mailroom/http/broadcasts-schema.js";

/** POST /v1/broadcasts/:id/ab/winner { variant } -> { broadcast }: a user picks the A/B winner during the wait (DESIGN §9.8). */
export const registerAbWinner: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/broadcasts/:id/ab/winner",
    operationId: "chooseBroadcastAbWinner",
    tags: ["Broadcasts"],
    summary: "Choose an A/B test's winner now",
    description:
      "While the broadcast waits for its A/B winner (`abTest.state` `waiting`: the test share was sent), the variant given goes to the rest of the audience at once, instead of the one with the best rate after `waitFor`.",
    params: broadcastIdParams,
    body: abWinnerRequestSchema,
    responses: {
      200: { description: "The broadcast with `abTest.winner` and `winnerChosenBy` `user`.", body: broadcastEnvelope },
      400: { description: "`invalid_payload`: `variant` is not the index of one of the variants; `invalid_json`.", body: broadcastErrorSchema },
      404: { description: "`broadcast_not_found` (also for another workspace's broadcast).", body: broadcastErrorSchema },
      409: {
        description: "`ab_winner_already_chosen` (by the metric or a user: `winner` says which), or `ab_test_not_waiting` (no A/B test, the test share not sent yet, cancelled or completed).",
        body: broadcastErrorSchema,
      },
      ...GATING_RESPONSES,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
      ...UNAUTHORIZED_RESPONSE,
    },
    handler: async (request, reply, { params: { id }, body }) => {
      const res = await deps.clients.broadcast.chooseAbWinner({ workspaceId: workspaceOf(request), id, variant: body.variant }, rpcOptions(request));
      return reply.send({ broadcast: broadcastJson(res.broadcast!) });
    },
  });
