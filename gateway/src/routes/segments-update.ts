import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { invalidSegment, segmentEnvelope, segmentIdParams, segmentJson, segmentNotFound, updateSegmentSchema } from "./segments-schema.js";

/** PATCH /v1/segments/:id { name?, filter? } -> { segment }: each field only when given; a new filter is validated first. */
export const registerUpdateSegment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "PATCH",
    url: "/v1/segments/:id",
    operationId: "updateSegment",
    tags: ["Segments"],
    summary: "Rename a segment or replace its filter",
    params: segmentIdParams,
    body: updateSegmentSchema,
    responses: {
      200: { description: "The segment as changed.", body: segmentEnvelope },
      400: invalidSegment,
      404: segmentNotFound,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const res = await deps.clients.audiences.updateSegment(
        {
          workspaceId: workspaceOf(request),
          segmentId: params.id,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.filter !== undefined ? { filterJson: JSON.stringify(body.filter) } : {}),
        },
        rpcOptions(request),
      );
      return reply.send({ segment: segmentJson(res.segment!) });
    },
  });
