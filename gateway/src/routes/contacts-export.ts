import { Readable, pipeline } from "node:stream";
import { z } from "zod";
import { stringify } from "csv-stringify";
import type { JsonValue } from "@bufbuild/protobuf";
import { ContactStatus, type Contact, type ListContactsResponse } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { CONTACT_STATUSES, FILTER_DESCRIPTION, iso } from "@mailroom/http/contacts-schema.js";

/** Contacts per audience call: the most ListContacts gives in one page. */
export const EXPORT_PAGE_SIZE = 500;
/** The fixed columns, before one column per custom property (by API slug). */
export const EXPORT_COLUMNS = ["id", "email", "firstName", "lastName", "status", "createdAt", "updatedAt"] as const;

const exportQuerySchema = z.strictObject({
  status: z.enum(CONTACT_STATUSES).optional().meta({ description: "Only contacts with this status." }),
  filter: z.string().optional().meta({ description: FILTER_DESCRIPTION }),
});

/** A property value as one CSV cell: numbers stay numbers, lists comma-separated (as the CSV import reads them), objects as JSON. */
function cell(value: JsonValue | undefined): string | number {
  if (value === undefined || value === null) return "";
  if (typeof value === "number") return value;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((v) => (typeof v === "string" ? v : JSON.stringify(v))).join(",");
  return JSON.stringify(value);
}

function row(c: Contact, slugs: string[]): (string | number)[] {
  const props = (c.properties ?? {}) as Record<string, JsonValue>;
  return [
    c.id, c.email, c.firstName, c.lastName, ContactStatus[c.status] ?? "SUBSCRIBED", iso(c.createdAt) ?? "", iso(c.updatedAt) ?? "",
    ...slugs.map((slug) => cell(props[slug])),
  ];
}

/**
 * The rows, one ListContacts page at a time (cursor paging in creation order): a page is asked
 * for only when the CSV stream below wants more, so memory holds one page whatever the size.
 */
async function* rows(
  fetchPage: (cursor: string) => Promise<ListContactsResponse>,
  first: ListContactsResponse,
  slugs: string[],
): AsyncGenerator<(string | number)[]> {
  yield [...EXPORT_COLUMNS, ...slugs];
  let page = first;
  for (;;) {
    for (const c of page.contacts) yield row(c, slugs);
    if (!page.page?.hasMore || !page.page.nextCursor) return;
    page = await fetchPage(page.page.nextCursor);
  }
}

/**
 * GET /v1/contacts/export?status&filter -> text/csv, streamed with backpressure (DESIGN §9.3).
 * Registered before /v1/contacts/:id. Cells are quoted where needed (commas, quotes, line
 * breaks) and text starting with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed
 * with `'` so a spreadsheet does not run it as a formula.
 */
export const registerContactsExport: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/contacts/export",
    operationId: "exportContacts",
    tags: ["Contacts"],
    summary: "Export the workspace's contacts as CSV",
    description:
      "Streams every contact of the workspace (optionally only one `status`, and only those matching `filter`), oldest first, as CSV with a header row: `id`, `email`, `firstName`, `lastName`, `status`, `createdAt`, `updatedAt`, then one column per custom property (by API slug). Multi-select values are comma-separated, as the CSV import reads them. Text that a spreadsheet would run as a formula (starting with `=`, `+`, `-`, `@`, tab or carriage return) is prefixed with `'`. Memory stays bounded whatever the size; a failure after the first rows ends the response early (the last line is then incomplete).",
    scope: "api_read",
    query: exportQuerySchema,
    responses: {
      200: { description: "The CSV (`Content-Disposition: attachment`).", content: { "text/csv": z.string().meta({ contentMediaType: "text/csv" }) } },
      400: { description: "`invalid_request` (bad `status`, unknown parameter) or `invalid_filter` (bad JSON or filter; the message names the path).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const workspaceId = workspaceOf(request);
      const status = query.status ? ContactStatus[query.status] : ContactStatus.UNSPECIFIED;
      const fetchPage = (cursor: string) =>
        deps.clients.contacts.listContacts({ workspaceId, status, filter: query.filter ?? "", page: { limit: EXPORT_PAGE_SIZE, cursor } }, rpcOptions(request));
      // The properties and the first page before any byte is sent: a refusal is still a JSON error.
      const [properties, first] = await Promise.all([
        deps.clients.contacts.listContactProperties({ workspaceId }, rpcOptions(request)),
        fetchPage(""),
      ]);
      const slugs = properties.properties.filter((p) => !p.builtIn).map((p) => p.slug);
      const csv = stringify({ escape_formulas: true });
      // An audience failure mid-way destroys the CSV stream (the response ends early); a client
      // that goes away destroys it too, which stops the paging.
      pipeline(Readable.from(rows(fetchPage, first, slugs)), csv, (err) => {
        if (err && !reply.raw.destroyed) request.log.warn({ err }, "contacts export ended early");
      });
      const day = new Date().toISOString().slice(0, 10);
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="contacts-${day}.csv"`)
        .header("cache-control", "no-store")
        .send(csv);
    },
  });
};
