import { Readable, pipeline } from "node:stream";
import { z } from "zod";
import { stringify } from "csv-stringify";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { SuppressionReason, type ExportSuppressionsResponse } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { REASON_TO_PB, reasonQuery, sinceQuery, suppressionJson } from "@mailroom/http/suppressions-schema.js";

/** The columns, as POST /v1/suppressions/import reads them: an export imports back unchanged. */
export const SUPPRESSION_EXPORT_COLUMNS = ["email", "domain", "reason", "created_at", "source"] as const;
/** Suppressions per streamed ExportSuppressions message. */
const EXPORT_BATCH = 2_000;

const exportQuery = z.strictObject({ reason: reasonQuery, since: sinceQuery });

async function* rows(first: IteratorResult<ExportSuppressionsResponse>, rest: AsyncIterator<ExportSuppressionsResponse>): AsyncGenerator<string[]> {
  try {
    yield [...SUPPRESSION_EXPORT_COLUMNS];
    for (let next = first; !next.done; next = await rest.next()) {
      for (const s of next.value.suppressions) {
        const j = suppressionJson(s);
        yield [j.email ?? "", j.domain ?? "", j.reason, j.createdAt, j.source ?? ""];
      }
    }
  } finally {
    // A client gone away stops the audience unit's stream too.
    await rest.return?.();
  }
}

/**
 * GET /v1/suppressions/export?reason&since -> text/csv, streamed from the audience unit's
 * ExportSuppressions with backpressure: memory holds a batch whatever the list's size.
 */
export const registerSuppressionsExport: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "GET",
    url: "/v1/suppressions/export",
    operationId: "exportSuppressions",
    tags: ["Suppressions"],
    summary: "Export the suppression list as CSV",
    description: "Streams every listed suppression (optionally one `reason`, only those created `since`) in address order as CSV with a header row: `email`, `domain` (one of the two set), `reason`, `created_at` (ISO 8601), `source`. `POST /v1/suppressions/import` reads this file back as it is. Text a spreadsheet would run as a formula is prefixed with `'`. A failure after the first rows ends the response early.",
    scope: "api_read",
    query: exportQuery,
    responses: {
      200: { description: "The CSV (`Content-Disposition: attachment`).", content: { "text/csv": z.string().meta({ contentMediaType: "text/csv" }) } },
      400: { description: "`invalid_request` (reason, since, unknown parameter).", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const stream = deps.clients.contacts.exportSuppressions({
        workspaceId: workspaceOf(request),
        reason: query.reason ? REASON_TO_PB[query.reason] : SuppressionReason.UNSPECIFIED,
        since: query.since ? timestampFromDate(new Date(query.since)) : undefined,
        batchSize: EXPORT_BATCH,
      }, { ...rpcOptions(request), timeoutMs: 60 * 60_000 });
      const iterator = stream[Symbol.asyncIterator]();
      // The first batch before any byte is sent: a refusal is still a JSON error.
      const first = await iterator.next();
      const csv = stringify({ escape_formulas: true });
      pipeline(Readable.from(rows(first, iterator)), csv, (err) => {
        if (err && !reply.raw.destroyed) request.log.warn({ err }, "suppressions export ended early");
      });
      const day = new Date().toISOString().slice(0, 10);
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="suppressions-${day}.csv"`)
        .header("cache-control", "no-store")
        .send(csv);
    },
  });
