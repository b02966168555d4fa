import { Readable, pipeline } from "node:stream";
import { z } from "zod";
import { stringify } from "csv-stringify";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { EmailStatus, type EmailRecord, type ListEmailsRequestSchema, type ListEmailsResponse } from "@mailroom/proto/email/v1/email_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { parseSendAt, statusName } from "../schemas/email.js";
import { defineRoute, type RouteModule } from "./route.js";
import { emailWithOutcomesJson, emailWithOutcomesSchema } from "./emails-get.js";

/**
 * The email log (DESIGN §9.3): GET /v1/emails lists the workspace's emails newest first, each
 * item exactly what GET /v1/emails/:id answers, and GET /v1/emails/export streams the same
 * selection as CSV. Both read the email service's ListEmails, whose cursor is the position
 * (createdAt, id) of a page's last email: pages never repeat or skip an email, even while new
 * ones arrive (they are newer than the first page).
 *
 * `tag` (DESIGN §9.5): `name:value`, repeatable; an email must carry every tag asked for.
 */

const DEFAULT_LIMIT = 20;
/** Emails per ListEmails call while exporting (the most one call gives). */
export const EXPORT_PAGE_SIZE = 100;
const STATUSES = ["SCHEDULED", "SENT", "DELIVERED", "FAILED", "CANCELLED"] as const;
const TAG = /^[A-Za-z0-9_-]{1,256}:[A-Za-z0-9_-]{1,256}$/;
/** An email carries at most 10 tags: more in a filter can match nothing. */
const MAX_TAG_FILTERS = 10;

/** `tag=name:value`, once or repeated (the query parser gives a list then): the same schema for the list and the stats. */
export const tagQuery = z
  .union([z.string().max(600), z.array(z.string().max(600)).max(MAX_TAG_FILTERS, `at most ${MAX_TAG_FILTERS} tags`)])
  .optional();

/** The tag filters of a query, each checked (`name:value`); a refusal names the bad one. */
export function tagFilters(tag: string | string[] | undefined): string[] {
  const tags = tag === undefined ? [] : [tag].flat();
  for (const t of tags) {
    if (!TAG.test(t)) throw refusal({ code: "invalid_request", message: `tag must be name:value (letters, digits, "_" and "-", at most 256 each); got ${JSON.stringify(t.slice(0, 80))}` });
  }
  return [...new Set(tags)];
}

const filterFields = {
  status: z.string().max(200).optional().meta({
    description: `Only emails in this status, or in any of several, comma-separated (\`FAILED,CANCELLED\`): ${STATUSES.join(", ")} (case-insensitive). Anything else is a 400 \`invalid_request\`.`,
  }),
  recipient: z.string().max(320).optional().meta({ description: "Only emails to this address (the whole address, case-insensitive; a display name in `to` is ignored)." }),
  groupBy: z.string().max(200).optional().meta({ description: "Only emails sent with this `groupBy`." }),
  tag: tagQuery.meta({
    description: `\`name:value\` (letters, digits, \`_\` and \`-\`): only emails carrying this tag. Repeatable, up to ${MAX_TAG_FILTERS} (\`?tag=category:invoice&tag=plan:pro\`): an email must carry every one. A value that is not \`name:value\` is a 400 \`invalid_request\`.`,
  }),
  since: z.string().max(64).optional().meta({
    description: "ISO 8601: only emails created at or after this time. A date-time with a zone (`2026-01-31T09:30:00Z`, `…+02:00`) or a date (`2026-01-31`, midnight UTC).",
    examples: ["2026-01-31T00:00:00Z"],
  }),
  until: z.string().max(64).optional().meta({ description: "ISO 8601, as `since`: only emails created before this time.", examples: ["2026-02-01"] }),
};

const listQuerySchema = z.strictObject({
  limit: z.coerce
    .number({ error: "limit must be a whole number from 1 to 100" })
    .int("limit must be a whole number from 1 to 100")
    .min(1, "limit must be a whole number from 1 to 100")
    .max(100, "limit must be a whole number from 1 to 100")
    .optional()
    .meta({ default: DEFAULT_LIMIT }),
  cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page (with the same filters)." }),
  ...filterFields,
});

const exportQuerySchema = z.strictObject(filterFields);

type Filters = { [K in Exclude<keyof typeof filterFields, "tag">]?: string } & { tag?: string | string[] };

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** An ISO 8601 instant: a date-time with a zone, or a date (its midnight in UTC). */
function instant(name: string, value: string): Date {
  const day = DAY.exec(value.trim());
  const at = day ? new Date(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))) : parseSendAt(value);
  if (!at || Number.isNaN(at.getTime()) || (day && at.getUTCDate() !== Number(day[3]))) {
    throw refusal({ code: "invalid_request", message: `${name} must be an ISO 8601 date-time with a zone (2026-01-31T09:30:00Z) or a date (2026-01-31); got ${JSON.stringify(value.slice(0, 64))}` });
  }
  return at;
}

/** The query's filters as a ListEmails request (without the page); every refusal names its parameter. */
function filtersOf(workspaceId: string, q: Filters): MessageInitShape<typeof ListEmailsRequestSchema> {
  const statuses = q.status === undefined ? [] : q.status.split(",").map((s) => s.trim().toUpperCase());
  const unknown = statuses.filter((s) => !(STATUSES as readonly string[]).includes(s));
  if (unknown.length || (q.status !== undefined && !statuses.length)) {
    throw refusal({ code: "invalid_request", message: `status must be one or more of ${STATUSES.join(", ")}, comma-separated; got ${JSON.stringify(q.status!.slice(0, 80))}` });
  }
  const tags = tagFilters(q.tag);
  const since = q.since === undefined ? undefined : instant("since", q.since);
  const until = q.until === undefined ? undefined : instant("until", q.until);
  if (since && until && since > until) throw refusal({ code: "invalid_request", message: "since is after until" });
  const recipient = q.recipient?.trim() ?? "";
  return {
    workspaceId,
    statuses: [...new Set(statuses)].map((s) => EmailStatus[s as (typeof STATUSES)[number]]),
    recipient,
    recipientExact: recipient !== "",
    // An empty groupBy (a blank form field) filters nothing.
    ...(q.groupBy ? { groupBy: q.groupBy } : {}),
    tags,
    ...(since ? { createdFrom: timestampFromDate(since) } : {}),
    ...(until ? { createdTo: timestampFromDate(until) } : {}),
  };
}

const emailListSchema = z
  .strictObject({
    emails: z.strictObject({
      items: z.array(emailWithOutcomesSchema).meta({ description: "Newest first; each exactly what `GET /v1/emails/{id}` answers." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` (with the same filters) for the next, older page; null on the last page." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "EmailList" });

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");

/** The CSV's columns, in order: the record, then when each outcome first happened. */
export const EMAIL_EXPORT_COLUMNS = [
  "id", "createdAt", "from", "to", "subject", "status", "groupBy", "type", "template", "reason", "sendAt", "sentAt",
  "deliveredAt", "openedAt", "clickedAt", "bouncedAt", "bounceType", "failedAt", "complainedAt", "unsubscribedAt", "opens", "clicks",
  // What the email carried (DESIGN §9.5), each list joined with "; ": last, so readers by position keep working.
  "cc", "bcc", "tags", "attachments",
] as const;

function row(r: EmailRecord): string[] {
  const o = r.outcomes;
  return [
    r.id, iso(r.createdAt), r.type === "raw" ? r.from : "", r.to, r.type === "raw" ? r.subject : "", statusName(r.status), r.groupBy,
    r.type, r.type === "templated" ? r.template : "", r.statusReason, iso(r.sendAt), iso(r.sentAt),
    iso(o?.deliveredAt), iso(o?.firstOpenedAt), iso(o?.firstClickedAt), iso(o?.bouncedAt), o?.bounceType ?? "", iso(o?.failedAt),
    iso(o?.complainedAt), iso(o?.unsubscribedAt), String(o?.opens ?? 0), String(o?.clicks ?? 0),
    r.cc.join("; "), r.bcc.join("; "), r.tags.map((t) => `${t.name}:${t.value}`).join("; "), r.attachments.map((a) => a.filename).join("; "),
  ];
}

/**
 * The CSV's rows, one ListEmails page at a time: a page is asked for only when the CSV stream
 * wants more (Readable.from pulls on demand), so memory holds one page whatever the size.
 */
async function* rows(fetchPage: (cursor: string) => Promise<ListEmailsResponse>, first: ListEmailsResponse): AsyncGenerator<string[]> {
  yield [...EMAIL_EXPORT_COLUMNS];
  let page = first;
  for (;;) {
    for (const r of page.emails) yield row(r);
    if (!page.nextCursor) return;
    page = await fetchPage(page.nextCursor);
  }
}

const filterErrors = "`invalid_request`: a `status` that is not one of the statuses, a `since` or `until` that is not ISO 8601 (or `since` after `until`), a `tag` that is not `name:value`, an unknown parameter";

/**
 * GET /v1/emails?limit&cursor&status&recipient&groupBy&tag&since&until -> { emails: { items, cursor, hasMore } }
 * GET /v1/emails/export?status&recipient&groupBy&tag&since&until -> text/csv, streamed with backpressure
 */
export const registerListEmails: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/emails",
    operationId: "listEmails",
    tags: ["Emails"],
    summary: "The email log: the workspace's emails, newest first, filtered and cursor-paginated",
    description: "Each item is the email exactly as `GET /v1/emails/{id}` answers it. Pages never repeat or skip an email, also while new ones are sent. Unknown query parameters are a 400 `invalid_request`.",
    scope: "api_read",
    query: listQuerySchema,
    responses: {
      200: { description: "One page.", body: emailListSchema },
      400: { description: `${filterErrors}, a \`limit\` outside 1–100; or \`invalid_cursor\`: a cursor this API did not return.`, body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.email.listEmails(
        { ...filtersOf(workspaceOf(request), query), limit: query.limit ?? DEFAULT_LIMIT, cursor: query.cursor ?? "" },
        rpcOptions(request),
      );
      return reply.send({ emails: { items: res.emails.map(emailWithOutcomesJson), cursor: res.nextCursor || null, hasMore: res.nextCursor !== "" } });
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/v1/emails/export",
    operationId: "exportEmails",
    tags: ["Emails"],
    summary: "Export the email log as CSV",
    description: `Streams every email the same filters as \`GET /v1/emails\` select, newest first, as CSV with a header row: ${EMAIL_EXPORT_COLUMNS.map((c) => `\`${c}\``).join(", ")} (times in ISO 8601 UTC; an outcome's time is when it first happened, empty when it did not; \`cc\`, \`bcc\`, \`tags\` (\`name:value\`) and \`attachments\` (file names) each joined with \`; \`). Cells holding commas, quotes or line breaks are quoted; text that a spreadsheet would run as a formula (starting with \`=\`, \`+\`, \`-\`, \`@\`, tab or carriage return) is prefixed with \`'\`. Memory stays bounded whatever the size; a failure after the first rows ends the response early (the last line is then incomplete).`,
    scope: "api_read",
    query: exportQuerySchema,
    responses: {
      200: { description: "The CSV (`Content-Disposition: attachment`).", content: { "text/csv": z.string().meta({ contentMediaType: "text/csv" }) } },
      400: { description: `${filterErrors}.`, body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const filters = filtersOf(workspaceOf(request), query);
      const fetchPage = (cursor: string) => deps.clients.email.listEmails({ ...filters, limit: EXPORT_PAGE_SIZE, cursor }, rpcOptions(request));
      // The first page before any byte is sent: a refusal or an outage is still a JSON error.
      const first = await fetchPage("");
      const csv = stringify({ escape_formulas: true });
      // A failure mid-way destroys the CSV stream (the response ends early); a client that goes
      // away destroys it too, which stops the paging.
      pipeline(Readable.from(rows(fetchPage, first)), csv, (err) => {
        if (err && !reply.raw.destroyed) request.log.warn({ err }, "emails export ended early");
      });
      const day = new Date().toISOString().slice(0, 10);
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="emails-${day}.csv"`)
        .header("cache-control", "no-store")
        .send(csv);
    },
  });
};
