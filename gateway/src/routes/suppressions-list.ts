import { z } from "zod";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { REASON_TO_PB, reasonQuery, sinceQuery, SUPPRESSIONS_DEFAULT_LIMIT, SUPPRESSIONS_MAX_LIMIT, suppressionJson, suppressionSchema } from "@mailroom/http/suppressions-schema.js";

const listQuery = z.strictObject({
  reason: reasonQuery,
  since: sinceQuery,
  cursor: z.string().max(400).optional().meta({ description: "The `cursor` of the previous page." }),
  limit: z.coerce.number().int().min(1).max(SUPPRESSIONS_MAX_LIMIT).optional().meta({ default: SUPPRESSIONS_DEFAULT_LIMIT }),
});

/** GET /v1/suppressions?reason&since&cursor&limit -> { suppressions: { items, cursor, hasMore } }, by address (domains as `@domain`). */
export const registerListSuppressions: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/suppressions",
    operationId: "listSuppressions",
    tags: ["Suppressions"],
    summary: "List the suppression list (addresses and domains)",
    description: "Addresses and whole domains no mail goes to, in address order (a domain sorts as `@domain`, before addresses), cursor-paginated. An address erased at its contact's request stays suppressed but is never listed (only its hash is kept).",
    scope: "api_read",
    query: listQuery,
    responses: {
      200: {
        description: "One page.",
        body: z.strictObject({
          suppressions: z.strictObject({ items: z.array(suppressionSchema), cursor: z.string().nullable(), hasMore: z.boolean() }),
        }).meta({ id: "SuppressionList" }),
      },
      400: { description: "`invalid_request` (limit, reason, since) or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.contacts.listSuppressions({
        workspaceId: workspaceOf(request),
        page: { limit: query.limit ?? SUPPRESSIONS_DEFAULT_LIMIT, cursor: query.cursor ?? "" },
        reason: query.reason ? REASON_TO_PB[query.reason] : SuppressionReason.UNSPECIFIED,
        since: query.since ? timestampFromDate(new Date(query.since)) : undefined,
      }, rpcOptions(request));
      const hasMore = Boolean(res.page?.hasMore);
      return reply.send({ suppressions: { items: res.suppressions.map(suppressionJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });
