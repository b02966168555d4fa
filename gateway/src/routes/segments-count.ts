import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { segmentIdParams, segmentNotFound } from "./segments-schema.js";

const countSchema = z.strictObject({ count: z.number().int().min(0).meta({ description: "Contacts (any status) the filter matches now." }) }).meta({ id: "SegmentCount" });

/** GET /v1/segments/:id/count -> { count }: exact, at the moment asked. */
export const registerCountSegment: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/segments/:id/count",
    operationId: "countSegment",
    tags: ["Segments"],
    summary: "Count a segment's contacts (exact, now)",
    scope: "api_read",
    params: segmentIdParams,
    responses: {
      200: { description: "The count.", body: countSchema },
      400: { description: "`invalid_filter`: the stored filter no longer holds (a property it names was removed).", body: apiErrorSchema },
      404: segmentNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.audiences.countSegment({ workspaceId: workspaceOf(request), segmentId: params.id }, rpcOptions(request));
      return reply.send({ count: Number(res.count) });
    },
  });
