import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { segmentIdParams, segmentJson, segmentNotFound, segmentSchema } from "./segments-schema.js";

const deletedSchema = z.strictObject({ segment: segmentSchema, isDeleted: z.literal(true) }).meta({ id: "SegmentDeleted" });

/**
 * DELETE /v1/segments/:id -> { segment, isDeleted }. A draft broadcast whose audience names it
 * is refused at scheduling (400 `audience_not_found`); one already sending stops resolving.
 */
export const registerDeleteSegment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/segments/:id",
    operationId: "deleteSegment",
    tags: ["Segments"],
    summary: "Delete a segment",
    params: segmentIdParams,
    responses: { 200: { description: "The segment as it was.", body: deletedSchema }, 404: segmentNotFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.audiences.deleteSegment({ workspaceId: workspaceOf(request), segmentId: params.id }, rpcOptions(request));
      return reply.send({ segment: segmentJson(res.segment!), isDeleted: true });
    },
  });
