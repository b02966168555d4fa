import { createReadStream } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { parse, type CsvError } from "csv-parse";
import { ImportFileError } from "./records.js";

/** Largest JSON export read (it is parsed whole; CSV files are streamed whatever their size). */
export const MAX_JSON_BYTES = 512 * 1024 * 1024;
/** Largest CSV record: a longer one is a quote that never closes. */
const MAX_RECORD_SIZE = 256 * 1024;

export interface CsvRow {
  /** 1-based line where the row starts. */
  line: number;
  /** Cells by header name (the first column of a repeated name wins). */
  row: Record<string, string>;
}

export const baseName = (file: string) => path.basename(file);

/** Fails with a one-line reason when the file cannot be opened (missing, a directory, unreadable). */
export async function checkReadable(file: string): Promise<number> {
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new ImportFileError(`${file} is not a file`);
    return info.size;
  } catch (err) {
    if (err instanceof ImportFileError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new ImportFileError(code === "ENOENT" ? `${file}: no such file` : `${file}: cannot read it (${code ?? String(err)})`);
  }
}

/**
 * The rows of a CSV file with a header row, streamed. A file that is not well-formed CSV (an
 * unclosed quote, a row with more or fewer cells than the header) fails with ImportFileError
 * naming the file and the line.
 */
export async function* readCsv(input: Readable, file: string): AsyncGenerator<CsvRow & { header: string[] }> {
  const parser = parse({
    bom: true,
    skip_empty_lines: true,
    info: true,
    max_record_size: MAX_RECORD_SIZE,
    record_delimiter: ["\r\n", "\n", "\r"],
  });
  input.on("error", (err) => parser.destroy(err));
  input.pipe(parser);
  let header: string[] | undefined;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      const line = info.lines - record.reduce((n, cell) => n + (cell.match(/\r\n|\n|\r/g)?.length ?? 0), 0);
      if (!header) {
        header = record.map((h) => h.trim());
        continue;
      }
      const row: Record<string, string> = {};
      header.forEach((name, i) => {
        if (!(name in row)) row[name] = record[i] ?? "";
      });
      yield { header, line, row };
    }
  } catch (err) {
    if (err instanceof ImportFileError) throw err;
    const csv = err as CsvError & { lines?: number };
    if (csv.code === "CSV_MAX_RECORD_SIZE") throw new ImportFileError(`${baseName(file)}: a record starting near line ${csv.lines ?? "?"} never ends (a quote that is never closed?)`);
    if (csv.code?.startsWith("CSV_")) throw new ImportFileError(`${baseName(file)} is not well-formed CSV: ${csv.message}`);
    throw err;
  } finally {
    input.destroy();
  }
  if (!header) throw new ImportFileError(`${baseName(file)} is empty (no header row)`);
}

export function csvFile(file: string): AsyncGenerator<CsvRow & { header: string[] }> {
  return readCsv(createReadStream(file), file);
}

/** The first header row of a CSV file (to tell which export it is), without reading further. */
export async function csvHeader(file: string): Promise<string[]> {
  const input = createReadStream(file);
  const parser = parse({ bom: true, skip_empty_lines: true, to_line: 1, max_record_size: MAX_RECORD_SIZE });
  input.on("error", (err) => parser.destroy(err));
  try {
    for await (const record of input.pipe(parser) as AsyncIterable<string[]>) return record.map((h) => h.trim());
  } catch (err) {
    const csv = err as CsvError;
    if (csv.code?.startsWith("CSV_")) throw new ImportFileError(`${baseName(file)} is not well-formed CSV: ${csv.message}`);
    throw err;
  } finally {
    input.destroy();
  }
  throw new ImportFileError(`${baseName(file)} is empty (no header row)`);
}

/** A JSON export, parsed whole. */
export async function readJson(file: string): Promise<unknown> {
  if ((await checkReadable(file)) > MAX_JSON_BYTES) throw new ImportFileError(`${baseName(file)} is larger than ${MAX_JSON_BYTES / 1024 / 1024} MB; export it in parts`);
  const text = await readFile(file, "utf8");
  try {
    return JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw new ImportFileError(`${baseName(file)} is not valid JSON: ${(err as Error).message}`);
  }
}

export const isJsonFile = (file: string) => /\.json$/i.test(file);

/** A cell by any of several header names, case- and space-insensitively. */
export function cell(row: Record<string, string>, ...names: string[]): string {
  for (const name of names) {
    if (name in row) return row[name].trim();
  }
  const wanted = new Set(names.map(norm));
  for (const [key, value] of Object.entries(row)) if (wanted.has(norm(key))) return value.trim();
  return "";
}

export const norm = (header: string) => header.trim().toLowerCase().replace(/[\s_-]+/g, "");

export const hasColumns = (header: string[], ...names: string[]) => {
  const have = new Set(header.map(norm));
  return names.every((n) => have.has(norm(n)));
};
