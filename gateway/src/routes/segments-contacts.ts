import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { contactJson, contactSchema } from "@mailroom/http/contacts-schema.js";
import { pageQuery, SEGMENTS_DEFAULT_LIMIT, segmentIdParams, segmentNotFound } from "./segments-schema.js";

const segmentContactsSchema = z
  .strictObject({
    contacts: z.strictObject({
      items: z.array(contactSchema).meta({ description: "As `GET /v1/contacts` shows them, in id (creation) order." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "SegmentContacts" });

/** GET /v1/segments/:id/contacts?limit&cursor -> { contacts: { items, cursor, hasMore } }: the contacts the filter matches now. */
export const registerListSegmentContacts: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/segments/:id/contacts",
    operationId: "listSegmentContacts",
    tags: ["Segments"],
    summary: "List a segment's contacts, cursor-paginated",
    scope: "api_read",
    params: segmentIdParams,
    query: pageQuery,
    responses: {
      200: { description: "One page.", body: segmentContactsSchema },
      400: { description: "`invalid_request`, `invalid_cursor`, or `invalid_filter` (the stored filter no longer holds).", body: apiErrorSchema },
      404: segmentNotFound,
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { params, query }) => {
      const res = await deps.clients.audiences.listSegmentContacts(
        { workspaceId: workspaceOf(request), segmentId: params.id, page: { limit: query.limit ?? SEGMENTS_DEFAULT_LIMIT, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ contacts: { items: res.contacts.map(contactJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });
