import type { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { parse, CsvError } from "csv-parse";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { SuppressionEntryOutcome, type SuppressionEntrySchema } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { callOptionsFor, rpcOptions, type GatewayDeps } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { REASON_TO_PB, SUPPRESSION_REASONS, type PublicSuppressionReason } from "@mailroom/http/suppressions-schema.js";

/**
 * Rows per AddSuppressions call (the audience unit takes up to 5,000). Larger batches cost less
 * per row (one lookup, one write, one intent and a few event messages each), smaller ones
 * hold less memory: at 5,000 a batch is a few MB on each side.
 */
export const IMPORT_BATCH = 5_000;
/** Batches on their way to the audience unit at once (see importCsv). */
const IN_FLIGHT = 2;
/** Rejected rows listed in the answer (all are counted in `rejectedCount`). */
export const REJECTED_LISTED_MAX = 1_000;
const COLUMNS = ["email", "domain", "reason", "source", "created_at"] as const;
type Column = (typeof COLUMNS)[number];

const importQuery = z.strictObject({
  filename: z.string().min(1).max(200).optional().meta({ description: "The file's name: the `source` of rows without one, and what the audit log names." }),
});

const importReport = z.strictObject({
  imported: z.number().int().meta({ description: "Suppressions created." }),
  existing: z.number().int().meta({ description: "Rows already suppressed (also a row repeated in the file): nothing changed but a stronger reason." }),
  rejected: z.array(z.strictObject({
    line: z.number().int().meta({ description: "The row's line in the file (the header is line 1)." }),
    code: z.string().meta({ description: "`invalid_email`, `invalid_domain`, `email_and_domain`, `missing_target`, `invalid_reason`, `invalid_created_at` or `invalid_source`." }),
    reason: z.string().meta({ description: "What is wrong with it." }),
  })).meta({ description: `The rows not imported (the first ${REJECTED_LISTED_MAX}).` }),
  rejectedCount: z.number().int().meta({ description: "How many rows were rejected in all." }),
}).meta({ id: "SuppressionImport" });

interface PendingRow {
  line: number;
  entry: MessageInitShape<typeof SuppressionEntrySchema>;
}

type Report = z.infer<typeof importReport>;

/** Other spellings of the columns (exports of other tools). */
const ALIASES: Record<string, Column> = { email_address: "email", e_mail: "email", emailaddress: "email", createdat: "created_at", created: "created_at" };

const header = (cell: string): Column | undefined => {
  const name = cell.trim().toLowerCase().replace(/[\s-]+/g, "_");
  const known = ALIASES[name] ?? name;
  return (COLUMNS as readonly string[]).includes(known) ? (known as Column) : undefined;
};

/** A row into an entry, or the reason it is rejected before the audience unit sees it (it checks addresses and domains). */
type Checked = { entry: MessageInitShape<typeof SuppressionEntrySchema> } | { code: string; reason: string };

/** A row's cell in a column, trimmed ("" when the file has no such column). */
function cellOf(row: string[], columns: Map<Column, number>, c: Column): string {
  const i = columns.get(c);
  return i === undefined ? "" : (row[i] ?? "").trim();
}

/** Dates as an export writes them, and their common shorter forms. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

function entryOf(row: string[], columns: Map<Column, number>, defaultSource: string): Checked {
  const email = cellOf(row, columns, "email");
  const domain = cellOf(row, columns, "domain");
  if (!email && !domain) return { code: "missing_target", reason: "the row has neither an email nor a domain" };
  if (email && domain) return { code: "email_and_domain", reason: "the row has both an email and a domain; give one" };
  const reasonText = cellOf(row, columns, "reason").toLowerCase();
  if (reasonText && !(SUPPRESSION_REASONS as readonly string[]).includes(reasonText)) {
    return { code: "invalid_reason", reason: `reason "${reasonText.slice(0, 40)}" is not one of ${SUPPRESSION_REASONS.join(", ")}` };
  }
  const createdText = cellOf(row, columns, "created_at");
  let createdAt: Date | undefined;
  if (createdText) {
    createdAt = ISO_DATE.test(createdText) ? new Date(createdText) : undefined;
    if (!createdAt || Number.isNaN(createdAt.getTime())) return { code: "invalid_created_at", reason: `created_at "${createdText.slice(0, 40)}" is not an ISO 8601 date` };
  }
  return {
    entry: {
      email,
      domain,
      reason: REASON_TO_PB[(reasonText || "imported") as PublicSuppressionReason],
      source: cellOf(row, columns, "source") || defaultSource,
      createdAt: createdAt ? timestampFromDate(createdAt) : undefined,
    },
  };
}

/**
 * Reads the CSV as it arrives and writes it a batch at a time (never the whole file in
 * memory). The first batch carries the caller as the audit log's actor, with the file's name:
 * the import is one entry there, not one per batch.
 */
async function importCsv(deps: GatewayDeps, request: FastifyRequest, body: Readable, filename: string): Promise<Report> {
  const workspaceId = workspaceOf(request);
  const report: Report = { imported: 0, existing: 0, rejected: [], rejectedCount: 0 };
  const reject = (line: number, code: string, reason: string) => {
    report.rejectedCount++;
    if (report.rejected.length < REJECTED_LISTED_MAX) report.rejected.push({ line, code, reason });
  };
  let first = true;
  const send = async (rows: PendingRow[]) => {
    const options = first ? rpcOptions(request) : callOptionsFor(String(request.id));
    first = false;
    const res = await deps.clients.contacts.addSuppressions({ workspaceId, entries: rows.map((r) => r.entry), label: filename }, options);
    res.results.forEach((r, i) => {
      if (r.outcome === SuppressionEntryOutcome.CREATED) report.imported++;
      else if (r.outcome === SuppressionEntryOutcome.EXISTING) report.existing++;
      else reject(rows[i].line, r.errorCode || "rejected", r.errorMessage || "rejected");
    });
  };

  const parser = body.pipe(parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, max_record_size: 64 * 1024 }));
  body.on("error", (err) => parser.destroy(err));
  let columns: Map<Column, number> | undefined;
  let batch: PendingRow[] = [];
  // Two batches on their way to the audience unit at once: one is written while the next is
  // read, and the audience unit overlaps one's commits with the other's work (measured: one at a
  // time was slower by about the commits' waits, and held no less memory there). While the
  // loop below awaits, it asks the parser for nothing more, so the request stream is paused
  // (backpressure) and memory holds a few batches whatever the file's size.
  const inFlight = new Set<Promise<void>>();
  let dispatched = 0;
  const dispatch = async (rows: PendingRow[]) => {
    // The first batch goes alone (it carries the audit entry, and a refusal of the whole
    // import, a workspace gone, comes back before more is written).
    if (dispatched++ === 0) return send(rows);
    const p = send(rows);
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p)).catch(() => undefined);
    if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
  };
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (!columns) {
        columns = new Map();
        record.forEach((cell, i) => {
          const c = header(cell);
          if (c && !columns!.has(c)) columns!.set(c, i);
        });
        if (!columns.has("email") && !columns.has("domain")) {
          throw refusal({ code: "invalid_csv", message: "the header row (line 1) names neither an `email` nor a `domain` column" });
        }
        continue;
      }
      const checked = entryOf(record, columns, filename);
      if (!("entry" in checked)) {
        reject(info.lines, checked.code, checked.reason);
        continue;
      }
      batch.push({ line: info.lines, entry: checked.entry });
      if (batch.length >= IMPORT_BATCH) {
        const rows = batch;
        batch = [];
        await dispatch(rows);
      }
    }
    if (batch.length) await dispatch(batch);
    await Promise.all(inFlight);
  } catch (err) {
    parser.destroy();
    await Promise.allSettled(inFlight);
    if (err instanceof CsvError) {
      const done = report.imported + report.existing;
      throw refusal({ code: "invalid_csv", message: `the file is not valid CSV (${err.message}); ${done} rows before it were imported or already suppressed (importing again is safe)` });
    }
    throw err;
  }
  if (!columns) throw refusal({ code: "invalid_csv", message: "the file is empty: it needs a header row naming an `email` or `domain` column" });
  report.rejected.sort((a, b) => a.line - b.line);
  return report;
}

/**
 * POST /v1/suppressions/import (text/csv, streamed) -> { imported, existing, rejected, rejectedCount }.
 * Registered in a scope of its own: its body parser hands over the request stream unread.
 */
export const registerSuppressionsImport: RouteModule = (app, deps) => {
  app.register(async (scope) => {
    scope.addContentTypeParser(["text/csv", "application/csv"], (_request, payload, done) => done(null, payload));
    defineRoute(scope, {
      method: "POST",
      url: "/v1/suppressions/import",
      operationId: "importSuppressions",
      tags: ["Suppressions"],
      summary: "Import suppressions from CSV (streamed)",
      description: [
        "The body is CSV (`Content-Type: text/csv`) with a header row naming an `email` or a `domain` column (each row sets one of them), and optionally `reason` (one of `hard_bounce`, `complaint`, `manual`, `unsubscribed`, `imported`; default `imported`), `source` (default: `filename`) and `created_at` (ISO 8601; when it was suppressed elsewhere). Other columns are ignored; header names are case-insensitive (`Email Address` reads as `email`). `GET /v1/suppressions/export` writes this format.",
        "Any size: the file is read and written in batches as it arrives, never held whole. Each row is checked on its own: a bad row is reported in `rejected` with its line and does not stop the others. Idempotent: importing the same file again creates nothing (`existing` counts those rows); a stronger reason (`hard_bounce`, `complaint`) replaces a weaker one. An `unsubscribed` row also unsubscribes the address's contact.",
        "A file that is not CSV (an unclosed quote) is refused with 400 `invalid_csv` naming the line; the rows before it stay imported, so sending the fixed file again is safe.",
      ].join("\n\n"),
      query: importQuery,
      requestContent: { required: true, content: { "text/csv": z.string().meta({ contentMediaType: "text/csv", examples: ["email,reason,created_at\nann@example.com,hard_bounce,2025-03-01T10:00:00Z\n"] }) } },
      parseBody: (raw) => raw as Readable,
      responses: {
        200: { description: "What the import did.", body: importReport },
        400: { description: "`invalid_csv`: no header row with an `email` or `domain` column, or not CSV (the message names the line).", body: apiErrorSchema },
        415: { description: "`unsupported_media_type`: send the file as `text/csv`.", body: apiErrorSchema },
        ...API_KEY_RESPONSES,
      },
      handler: async (request, reply, { query, body }) => {
        if (!body || typeof (body as Readable).pipe !== "function") throw refusal({ code: "invalid_csv", message: "send the file as the body, with Content-Type: text/csv" });
        return reply.send(await importCsv(deps, request, body, query.filename ?? ""));
      },
    });
  });
};
