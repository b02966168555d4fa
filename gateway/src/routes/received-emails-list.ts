import { z } from "zod";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { receivedEmailSummaryJson, receivedEmailSummarySchema } from "@mailroom/http/received-emails-schema.js";

const DEFAULT_LIMIT = 20;
const LIMIT_MESSAGE = "limit must be a whole number from 1 to 100";
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const isoDateTime = z.iso.datetime({ offset: true });

/** `since`: a date-time with a zone, or a date (its midnight in UTC). */
export function sinceOf(value: string): Date {
  const text = value.trim();
  const day = DAY.exec(text);
  const at = day ? new Date(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))) : isoDateTime.safeParse(text).success ? new Date(text) : undefined;
  if (!at || Number.isNaN(at.getTime()) || (day && at.getUTCDate() !== Number(day[3]))) {
    throw refusal({ code: "invalid_request", message: `since must be an ISO 8601 date-time with a zone (2026-01-31T09:30:00Z) or a date (2026-01-31); got ${JSON.stringify(value.slice(0, 64))}` });
  }
  return at;
}

const address = (name: string) =>
  z.email({ error: `${name} must be a whole email address` }).max(320).optional();

const listQuerySchema = z.strictObject({
  to: address("to").meta({ description: "Only emails to this address: an envelope or header recipient, the whole address, case-insensitive." }),
  from: address("from").meta({ description: "Only emails from this address (the whole address, case-insensitive)." }),
  since: z.string().max(64).optional().meta({
    description: "ISO 8601: only emails received at or after this time. A date-time with a zone (`2026-01-31T09:30:00Z`, `…+02:00`) or a date (`2026-01-31`, midnight UTC).",
    examples: ["2026-01-31T00:00:00Z"],
  }),
  limit: z.coerce.number({ error: LIMIT_MESSAGE }).int(LIMIT_MESSAGE).min(1, LIMIT_MESSAGE).max(100, LIMIT_MESSAGE).optional().meta({ default: DEFAULT_LIMIT }),
  cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page (with the same filters)." }),
});

const receivedListSchema = z
  .strictObject({
    receivedEmails: z.strictObject({
      items: z.array(receivedEmailSummarySchema).meta({ description: "Newest first; without the bodies and headers (`GET /v1/received-emails/{id}` has them)." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` (with the same filters) for the next, older page; null on the last page." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "ReceivedEmailList" });

/** GET /v1/received-emails?to&from&since&limit&cursor -> { receivedEmails: { items, cursor, hasMore } } */
export const registerListReceivedEmails: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/received-emails",
    operationId: "listReceivedEmails",
    tags: ["Receiving"],
    summary: "List the emails the workspace received, newest first, filtered and cursor-paginated",
    description: "Received emails are kept `MAILROOM_INBOUND_RETENTION_DAYS` (30 by default). Unknown query parameters are a 400 `invalid_request`.",
    query: listQuerySchema,
    responses: {
      200: { description: "One page.", body: receivedListSchema },
      400: { description: "`invalid_request`: a `to` or `from` that is not a whole address, a `since` that is not ISO 8601, a `limit` outside 1–100, an unknown parameter; or `invalid_cursor`: a cursor this API did not return.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const since = query.since === undefined ? undefined : sinceOf(query.since);
      const res = await deps.clients.receiving.listReceivedEmails(
        {
          workspaceId: workspaceOf(request),
          to: query.to?.toLowerCase() ?? "",
          from: query.from?.toLowerCase() ?? "",
          ...(since ? { since: timestampFromDate(since) } : {}),
          limit: query.limit ?? DEFAULT_LIMIT,
          cursor: query.cursor ?? "",
        },
        rpcOptions(request),
      );
      return reply.send({ receivedEmails: { items: res.emails.map(receivedEmailSummaryJson), cursor: res.nextCursor || null, hasMore: res.nextCursor !== "" } });
    },
  });
