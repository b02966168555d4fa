import type { Readable } from "node:stream";
import { Transform } from "node:stream";
import { parse, type CsvError } from "csv-parse";
import type { JsonObject } from "@bufbuild/protobuf";
import type { ContactInput } from "../gen/mailroom/directory/v1/directory_pb.js";
import { PropertyType } from "../gen/mailroom/directory/v1/directory_pb.js";
import { errorInfoOf } from "../services/kit/src/errors.js";
import { coercePropertyText } from "../services/directory/src/properties.js";
import type { PropertyType as TypeName } from "../services/directory/src/store.js";
import type { DirectoryClient } from "./client.js";

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
  rejected: RejectedRow[];
}

export interface ImportProgress {
  bytes: number;
  rows: number;
  rejected: number;
}

export interface ImportOptions {
  client: DirectoryClient;
  workspaceId: string;
  input: Readable;
  /** Rows per BatchUpsertContacts call (1-1000). */
  batchSize?: number;
  onProgress?: (p: ImportProgress) => void;
}

/** A problem with the file as a whole (its header): nothing was imported. */
export class ImportAbortedError extends Error {}

const TYPE_NAMES: Partial<Record<number, TypeName>> = {
  [PropertyType.STRING]: "string",
  [PropertyType.NUMBER]: "number",
  [PropertyType.BOOLEAN]: "boolean",
  [PropertyType.DATE]: "date",
};

type Column =
  | { kind: "email" | "firstName" | "lastName" | "timezone" | "subscribed" }
  | { kind: "property"; slug: string; type: TypeName }
  | { kind: "ignored" };

const BUILT_IN_HEADERS: Record<string, Column["kind"]> = {
  email: "email", emailaddress: "email", "e-mail": "email",
  firstname: "firstName", first_name: "firstName", "first name": "firstName",
  lastname: "lastName", last_name: "lastName", "last name": "lastName",
  timezone: "timezone", time_zone: "timezone", tz: "timezone",
  subscribed: "subscribed",
};

/** Maps header cells to contact fields and the workspace's properties; unknown headers abort. */
function mapHeader(header: string[], types: Map<string, TypeName>): Column[] {
  const unknown: string[] = [];
  const bySlugLower = new Map([...types].map(([slug, type]) => [slug.toLowerCase(), { slug, type }]));
  const columns = header.map((raw): Column => {
    const name = raw.trim();
    if (name === "") return { kind: "ignored" };
    const builtIn = BUILT_IN_HEADERS[name.toLowerCase().replace(/\s+/g, " ")];
    if (builtIn) return { kind: builtIn } as Column;
    const prop = types.has(name) ? { slug: name, type: types.get(name)! } : bySlugLower.get(name.toLowerCase());
    if (prop) return { kind: "property", ...prop };
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
    const key = c.kind === "property" ? `p:${c.slug}` : c.kind;
    if (c.kind !== "ignored" && seen.has(key)) throw new ImportAbortedError(`the CSV header names ${c.kind === "property" ? c.slug : c.kind} twice`);
    seen.add(key);
  }
  return columns;
}

/** One CSV row → a contact input, or the reason it cannot be one. */
function rowToContact(cells: string[], columns: Column[]): { contact: Partial<ContactInput> & { email: string }; error?: string } {
  const contact: Partial<ContactInput> & { email: string } = { email: "" };
  const properties: JsonObject = {};
  try {
    columns.forEach((col, i) => {
      const cell = cells[i] ?? "";
      switch (col.kind) {
        case "email":
          contact.email = cell.trim();
          break;
        case "firstName":
        case "lastName":
        case "timezone":
          if (cell.trim() !== "") contact[col.kind] = cell.trim();
          break;
        case "subscribed": {
          const v = coercePropertyText("subscribed", "boolean", cell);
          if (v !== undefined) contact.subscribed = v as boolean;
          break;
        }
        case "property": {
          const v = coercePropertyText(col.slug, col.type, cell);
          if (v !== undefined) properties[col.slug] = v;
          break;
        }
      }
    });
  } catch (err) {
    return { contact, error: errorInfoOf(err)?.message ?? (err as Error).message };
  }
  if (!contact.email) return { contact, error: "email is empty" };
  contact.properties = properties;
  return { contact };
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
 * Streams a CSV of contacts into the workspace in batches, upserting each row. Rows that
 * cannot be parsed or are refused by the directory are collected with their line and
 * reason; every other row is imported. A header naming unknown columns aborts before
 * anything is written.
 */
export async function importContactsCsv(opts: ImportOptions): Promise<ImportSummary> {
  const batchSize = Math.max(1, Math.min(opts.batchSize ?? 500, 1000));
  const props = await opts.client.listContactProperties({ workspaceId: opts.workspaceId });
  const types = new Map<string, TypeName>();
  for (const p of props.properties) {
    const t = TYPE_NAMES[p.type];
    if (!p.builtIn && t) types.set(p.slug, t);
  }

  const summary: ImportSummary = { rows: 0, created: 0, updated: 0, rejected: [] };
  let bytes = 0;
  const progress = () => opts.onProgress?.({ bytes, rows: summary.rows, rejected: summary.rejected.length });
  const parser = parse({
    bom: true,
    skip_empty_lines: true,
    relax_column_count: true,
    skip_records_with_error: true,
    info: true,
    record_delimiter: ["\r\n", "\n", "\r"],
  });
  parser.on("skip", (err: CsvError & { lines?: number }) => {
    summary.rows++;
    summary.rejected.push({ line: err.lines ?? 0, email: "", reason: `malformed CSV: ${err.message}` });
  });
  opts.input.on("error", (err) => parser.destroy(err));
  opts.input.pipe(byteCounter((n) => (bytes += n))).pipe(parser);

  let columns: Column[] | undefined;
  let batch: Array<{ line: number; contact: Partial<ContactInput> & { email: string } }> = [];
  const firstLineOf = new Map<string, number>();

  const flush = async () => {
    if (!batch.length) return;
    const sent = batch;
    batch = [];
    const res = await opts.client.batchUpsertContacts({ workspaceId: opts.workspaceId, contacts: sent.map((b) => b.contact) });
    for (const r of res.results) {
      const item = sent[r.index];
      if (r.ok) {
        if (r.created) summary.created++;
        else summary.updated++;
      } else {
        summary.rejected.push({ line: item.line, email: item.contact.email, reason: r.error?.message ?? "refused" });
      }
    }
    progress();
  };

  for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    // info.lines is where the record ends; quoted line breaks inside it moved it down.
    const line = info.lines - record.reduce((n, cell) => n + (cell.match(/\r\n|\n|\r/g)?.length ?? 0), 0);
    if (!columns) {
      columns = mapHeader(record, types);
      continue;
    }
    summary.rows++;
    if (record.length !== columns.length) {
      summary.rejected.push({ line, email: record[columns.findIndex((c) => c.kind === "email")] ?? "", reason: `expected ${columns.length} fields, found ${record.length}` });
      continue;
    }
    const { contact, error } = rowToContact(record, columns);
    if (error) {
      summary.rejected.push({ line, email: contact.email, reason: error });
      continue;
    }
    const key = contact.email.toLowerCase();
    const first = firstLineOf.get(key);
    if (first !== undefined) {
      summary.rejected.push({ line, email: contact.email, reason: `duplicate of line ${first}` });
      continue;
    }
    firstLineOf.set(key, line);
    batch.push({ line, contact });
    if (batch.length >= batchSize) await flush();
  }
  if (!columns) throw new ImportAbortedError("the CSV file is empty (no header row)");
  await flush();
  summary.rejected.sort((a, b) => a.line - b.line);
  progress();
  return summary;
}
