import type { Readable } from "node:stream";
import { Transform } from "node:stream";
import { parse, type CsvError, type InfoRecord } from "csv-parse";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ContactSource, type ContactInputSchema, type ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import type { Client } from "@connectrpc/connect";
import { FirstSeen } from "./first-seen.js";

/**
 * Shared by the CLI (`mailroom contacts import`) and the gateway's console import: the
 * mapping of a CSV to contacts is one rule, whoever uploads the file. Only the two
 * ContactService calls it makes (the audience unit) are needed, so either side passes its
 * own Connect client.
 */
export type ContactsClient = Pick<Client<typeof ContactService>, "listContactProperties" | "batchUpsertContacts">;

/** @deprecated The name from before the directory was split: use ContactsClient. */
export type DirectoryClient = ContactsClient;

export interface RejectedRow {
  /** 1-based line in the file where the row starts. */
  line: number;
  email: string;
  reason: string;
}

export interface ImportSummary {
  rows: number;
  created: number;
  updated: number;
  /** Every rejected row up to MAX_REJECTED_KEPT (by line); rejectedCount counts them all. */
  rejected: RejectedRow[];
  rejectedCount: number;
  /** Set when the import stopped before the end of the file; rows before `line` were imported. */
  stopped?: { line: number; reason: string };
}

export interface ImportProgress {
  bytes: number;
  rows: number;
  rejected: number;
}

export interface ImportOptions {
  client: ContactsClient;
  workspaceId: string;
  input: Readable;
  /** Rows per BatchUpsertContacts call (1-1000). */
  batchSize?: number;
  /** Batches sent before waiting for the oldest answer (the read-ahead bound). */
  maxInFlight?: number;
  /** Largest record accepted, in characters; a larger one (an unclosed quote) stops the import. */
  maxRecordSize?: number;
  onProgress?: (p: ImportProgress) => void;
}

/** A problem with the file as a whole (its header): nothing was imported. */
export class ImportAbortedError extends Error {}

export const DEFAULT_BATCH_SIZE = 1000;
export const DEFAULT_MAX_RECORD_SIZE = 64 * 1024;
/** Rejections kept for the report; beyond that they are only counted (memory stays bounded). */
export const MAX_REJECTED_KEPT = 10_000;

type ContactInit = MessageInitShape<typeof ContactInputSchema> & { email: string; textProperties: Record<string, string> };

/** Where a cell goes: a text field of the contact, or a text value the audience unit types. */
type Column =
  | { kind: "email" | "firstName" | "lastName" | "timezone" }
  | { kind: "text"; key: string }
  | { kind: "ignored" };

const BUILT_IN_HEADERS: Record<string, Column> = {
  email: { kind: "email" }, emailaddress: { kind: "email" }, "e-mail": { kind: "email" },
  firstname: { kind: "firstName" }, first_name: { kind: "firstName" }, "first name": { kind: "firstName" },
  lastname: { kind: "lastName" }, last_name: { kind: "lastName" }, "last name": { kind: "lastName" },
  timezone: { kind: "timezone" }, time_zone: { kind: "timezone" }, tz: { kind: "timezone" },
  // `status` (SUBSCRIBED, UNSUBSCRIBED, …) and the older yes/no `subscribed`; the audience unit reads both.
  status: { kind: "text", key: "status" },
  subscribed: { kind: "text", key: "subscribed" },
};

/** Maps header cells to contact fields and the workspace's properties; unknown headers abort. */
function mapHeader(header: string[], slugs: string[]): Column[] {
  const unknown: string[] = [];
  const bySlugLower = new Map(slugs.map((slug) => [slug.toLowerCase(), slug]));
  const columns = header.map((raw): Column => {
    const name = raw.trim();
    if (name === "") return { kind: "ignored" };
    const builtIn = BUILT_IN_HEADERS[name.toLowerCase().replace(/\s+/g, " ")];
    if (builtIn) return builtIn;
    const slug = slugs.includes(name) ? name : bySlugLower.get(name.toLowerCase());
    if (slug) return { kind: "text", key: slug };
    unknown.push(name);
    return { kind: "ignored" };
  });
  if (!columns.some((c) => c.kind === "email")) throw new ImportAbortedError("the CSV header has no email column");
  if (unknown.length) {
    throw new ImportAbortedError(
      `unknown column(s) ${unknown.map((u) => `"${u}"`).join(", ")}: not a contact field or property of this workspace ` +
        `(create them first: mailroom property create <slug> <string|number|boolean|date>)`,
    );
  }
  const seen = new Set<string>();
  for (const c of columns) {
    if (c.kind === "ignored") continue;
    const key = c.kind === "text" ? c.key : c.kind;
    if (seen.has(key)) throw new ImportAbortedError(`the CSV header names ${key} twice`);
    seen.add(key);
  }
  return columns;
}

/** One CSV row → a contact input. Typed values stay text: the audience unit converts them. */
function rowToContact(cells: string[], columns: Column[]): ContactInit {
  const contact: ContactInit = { email: "", textProperties: {} };
  columns.forEach((col, i) => {
    const cell = cells[i] ?? "";
    if (col.kind === "ignored" || cell.trim() === "") return;
    if (col.kind === "text") contact.textProperties[col.key] = cell;
    else contact[col.kind] = cell.trim();
  });
  return contact;
}

/** Counts the bytes read so progress can be shown against the file size. */
function byteCounter(onBytes: (n: number) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      onBytes(chunk.length);
      done(null, chunk);
    },
  });
}

/**
 * Streams a CSV of contacts into the workspace in batches, upserting each row. Memory stays
 * bounded whatever the file's size: the file is read only as fast as batches are answered
 * (at most `maxInFlight` batches ahead), duplicates are found through compact
 * fingerprints, and a record larger than `maxRecordSize` (typically a quote that is never
 * closed, which would otherwise swallow the rest of the file) stops the import there.
 * Rows that cannot be parsed or are refused by the audience unit are reported with their line
 * and reason; every other row is imported. A header naming unknown columns aborts before
 * anything is written.
 */
export async function importContactsCsv(opts: ImportOptions): Promise<ImportSummary> {
  const batchSize = Math.max(1, Math.min(opts.batchSize ?? DEFAULT_BATCH_SIZE, 1000));
  const maxInFlight = Math.max(1, opts.maxInFlight ?? 2);
  const maxRecordSize = opts.maxRecordSize ?? DEFAULT_MAX_RECORD_SIZE;
  const props = await opts.client.listContactProperties({ workspaceId: opts.workspaceId });
  const slugs = props.properties.filter((p) => !p.builtIn).map((p) => p.slug);

  const summary: ImportSummary = { rows: 0, created: 0, updated: 0, rejected: [], rejectedCount: 0 };
  const reject = (row: RejectedRow) => {
    summary.rejectedCount++;
    if (summary.rejected.length < MAX_REJECTED_KEPT) summary.rejected.push(row);
  };
  let bytes = 0;
  const progress = () => opts.onProgress?.({ bytes, rows: summary.rows, rejected: summary.rejectedCount });

  const counter = byteCounter((n) => (bytes += n));
  /** Line where the last complete record ended (kept in step with the parser, not the consumer). */
  let lastRecordEnd = 0;
  const parser = parse({
    bom: true,
    skip_empty_lines: true,
    relax_column_count: true,
    skip_records_with_error: true,
    max_record_size: maxRecordSize,
    info: true,
    record_delimiter: ["\r\n", "\n", "\r"],
    on_record: (record: string[], context: InfoRecord) => {
      lastRecordEnd = context.lines;
      return record;
    },
    on_skip: (err: (CsvError & { lines?: number }) | undefined): undefined => {
      if (summary.stopped) return undefined; // what is left of the oversized record
      if (err?.code === "CSV_MAX_RECORD_SIZE") {
        const line = lastRecordEnd + 1;
        summary.stopped = {
          line,
          reason: `the record starting at line ${line} is longer than ${Math.round(maxRecordSize / 1024)} KB ` +
            `(a quote opened there is probably never closed); nothing from that line on was imported`,
        };
        // Read no further: parse what was already read before the record, then end.
        opts.input.unpipe(counter);
        counter.unpipe(parser);
        opts.input.destroy();
        parser.end();
        return undefined;
      }
      summary.rows++;
      lastRecordEnd = err?.lines ?? lastRecordEnd;
      reject({ line: err?.lines ?? 0, email: "", reason: `malformed CSV: ${err?.message}` });
      return undefined;
    },
  });
  opts.input.on("error", (err) => parser.destroy(err));
  opts.input.pipe(counter).pipe(parser);

  let columns: Column[] | undefined;
  let batch: Array<{ line: number; contact: ContactInit }> = [];
  const firstLines = new FirstSeen();
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;

  const send = async (sent: typeof batch) => {
    const contacts = sent.map((b) => ({ ...b.contact, source: ContactSource.CSV_IMPORT }));
    const res = await opts.client.batchUpsertContacts({ workspaceId: opts.workspaceId, contacts });
    for (const r of res.results) {
      const item = sent[r.index];
      if (r.ok) {
        if (r.created) summary.created++;
        else summary.updated++;
      } else {
        reject({ line: item.line, email: item.contact.email, reason: r.error?.message ?? "refused" });
      }
    }
    progress();
  };
  /** Sends the batch, waiting first while `maxInFlight` batches are unanswered (backpressure). */
  const flush = async () => {
    if (!batch.length) return;
    const sent = batch;
    batch = [];
    while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
    if (failure) throw failure;
    const pending: Promise<void> = send(sent).catch((err) => { failure ??= err; }).finally(() => inFlight.delete(pending));
    inFlight.add(pending);
  };

  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (failure) throw failure;
      // info.lines is where the record ends; quoted line breaks inside it moved it down.
      const line = info.lines - record.reduce((n, cell) => n + (cell.match(/\r\n|\n|\r/g)?.length ?? 0), 0);
      if (!columns) {
        columns = mapHeader(record, slugs);
        continue;
      }
      summary.rows++;
      if (record.length !== columns.length) {
        reject({ line, email: record[columns.findIndex((c) => c.kind === "email")] ?? "", reason: `expected ${columns.length} fields, found ${record.length}` });
        continue;
      }
      const contact = rowToContact(record, columns);
      if (!contact.email) {
        reject({ line, email: "", reason: "email is empty" });
        continue;
      }
      const first = firstLines.firstLine(contact.email.toLowerCase(), line);
      if (first !== undefined) {
        reject({ line, email: contact.email, reason: `duplicate of line ${first}` });
        continue;
      }
      batch.push({ line, contact });
      if (batch.length >= batchSize) await flush();
    }
    if (!columns) {
      if (summary.stopped) throw new ImportAbortedError(`the CSV header is longer than ${Math.round(maxRecordSize / 1024)} KB`);
      throw new ImportAbortedError("the CSV file is empty (no header row)");
    }
    await flush();
  } finally {
    await Promise.all(inFlight);
    opts.input.destroy(); // a no-op after a normal end; after an abort, stop reading
  }
  if (failure) throw failure;
  summary.rejected.sort((a, b) => a.line - b.line);
  progress();
  return summary;
}
