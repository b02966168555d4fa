import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { segmentEnvelope, segmentIdParams, segmentJson, segmentNotFound } from "./segments-schema.js";

/** GET /v1/segments/:id -> { segment }. */
export const registerGetSegment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/segments/:id",
    operationId: "getSegment",
    tags: ["Segments"],
    summary: "Read a segment",
    scope: "api_read",
    params: segmentIdParams,
    responses: { 200: { description: "The segment.", body: segmentEnvelope }, 404: segmentNotFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.audiences.getSegment({ workspaceId: workspaceOf(request), segmentId: params.id }, rpcOptions(request));
      return reply.send({ segment: segmentJson(res.segment!) });
    },
  });
