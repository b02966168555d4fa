import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { emailCountersJson, emailStatsSchema } from "./stats-schema.js";
import { tagFilters, tagQuery } from "./emails-list.js";

const day = (what: string) =>
  z.string().optional().meta({ description: `${what} (inclusive): \`YYYY-MM-DD\` (a UTC day) or an ISO 8601 date-time (its UTC day).` });

/** GET /v1/stats/emails?from&to&groupBy&tag -> { stats: { from, to, totals, days, groups } }. */
export const registerEmailStats: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/stats/emails",
    operationId: "getEmailStats",
    tags: ["Stats"],
    summary: "Outcomes of transactional emails per day and per groupBy",
    description:
      "Days are UTC days. Each email is counted once per outcome, on the day it was sent, so a day's rates say what became of that day's emails (opens and clicks that come later are added to it). Default range: the 30 days up to today; at most 366 days.",
    query: z.object({
      from: day("First day; default 29 days before `to`"),
      to: day("Last day; default today"),
      groupBy: z.string().optional().meta({ description: "Only emails sent with this `groupBy`." }),
      tag: tagQuery.meta({ description: "`name:value`: only emails carrying this tag; repeatable (`?tag=category:invoice&tag=plan:pro`), an email must carry every one. Not `name:value`: 400 `invalid_request`." }),
    }),
    responses: {
      200: { description: "The counters.", body: emailStatsSchema },
      400: { description: "`invalid_request`: a date that cannot be read, `from` after `to`, more than 366 days, or a `tag` that is not `name:value`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const tags = tagFilters(query.tag);
      const res = await deps.clients.email.getStats(
        { workspaceId: workspaceOf(request), from: query.from ?? "", to: query.to ?? "", groupBy: query.groupBy, tags },
        rpcOptions(request),
      );
      return reply.send({
        stats: {
          from: res.from,
          to: res.to,
          ...(query.groupBy !== undefined ? { groupBy: query.groupBy } : {}),
          ...(tags.length ? { tags } : {}),
          totals: emailCountersJson(res.totals),
          days: res.days.map((d) => ({ date: d.date, ...emailCountersJson(d.counters) })),
          groups: res.groups.map((g) => ({ groupBy: g.groupBy, ...emailCountersJson(g.counters) })),
        },
      });
    },
  });
