import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { createSegmentSchema, invalidSegment, segmentEnvelope, segmentJson } from "./segments-schema.js";

/** POST /v1/segments { name, filter } -> 201 { segment }: the filter is validated first. */
export const registerCreateSegment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/segments",
    operationId: "createSegment",
    tags: ["Segments"],
    summary: "Create a segment (a saved filter)",
    body: createSegmentSchema,
    responses: {
      201: { description: "Created.", body: segmentEnvelope },
      400: invalidSegment,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.audiences.createSegment(
        { workspaceId: workspaceOf(request), name: body.name, filterJson: JSON.stringify(body.filter) },
        rpcOptions(request),
      );
      return reply.code(201).send({ segment: segmentJson(res.segment!) });
    },
  });
