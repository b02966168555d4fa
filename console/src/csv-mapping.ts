/**
 * Column mapping for the console's CSV imports (contacts, suppressions): the upload is kept
 * in this process for a while, its first rows are shown, and each column is mapped to a field
 * (or left out) before anything is imported. Works without JavaScript: the preview is a page,
 * the mapping a form of <select>s, one per column (views/csv-mapping.ts draws it).
 *
 * Uploads live in memory like the contact import jobs (contacts-import.ts explains why): at
 * most MAX_UPLOADS, each forgotten after KEEP_MS or once imported, and visible to their own
 * workspace only.
 */
import { randomBytes } from "node:crypto";
import { parse } from "csv-parse/sync";
import { refusal } from "@mailroom/http/errors.js";

export const PREVIEW_ROWS = 5;
const MAX_UPLOADS = 100;
const KEEP_MS = 30 * 60_000;
export const UPLOAD_ID = /^upl_[0-9a-f]{24}$/;

export interface Upload {
  id: string;
  workspaceId: string;
  file: Buffer;
  storedAt: number;
}

export class Uploads {
  private readonly uploads = new Map<string, Upload>();

  constructor(private readonly now: () => number = Date.now) {}

  put(workspaceId: string, file: Buffer): Upload {
    const cutoff = this.now() - KEEP_MS;
    for (const [k, u] of this.uploads) if (u.storedAt < cutoff) this.uploads.delete(k);
    if (this.uploads.size >= MAX_UPLOADS) {
      throw refusal({ code: "too_many_imports", status: 429, message: "Too many CSV uploads are waiting on this server; try again in a few minutes." });
    }
    const upload = { id: `upl_${randomBytes(12).toString("hex")}`, workspaceId, file, storedAt: this.now() };
    this.uploads.set(`${workspaceId}\u0000${upload.id}`, upload);
    return upload;
  }

  /** The upload, only for its own workspace (and while it is kept). */
  get(workspaceId: string, id: string): Upload | undefined {
    const u = UPLOAD_ID.test(id) ? this.uploads.get(`${workspaceId}\u0000${id}`) : undefined;
    return u && u.storedAt >= this.now() - KEEP_MS ? u : undefined;
  }

  /** The upload, or the 404 page saying it is gone. */
  require(workspaceId: string, id: string): Upload {
    const upload = this.get(workspaceId, id);
    if (!upload) throw refusal({ code: "not_found", status: 404, message: "No such upload (an upload is kept for 30 minutes, by the server it was sent to): upload the file again." });
    return upload;
  }

  delete(workspaceId: string, id: string): void {
    this.uploads.delete(`${workspaceId}\u0000${id}`);
  }
}

/** The CSV of an upload form (its `file` field): a non-empty file, or undefined. */
export function uploadedFile(body: unknown): Buffer | undefined {
  const file = (body as { file?: unknown } | undefined)?.file;
  return Buffer.isBuffer(file) && file.length > 0 ? file : undefined;
}

export interface Preview {
  header: string[];
  rows: string[][];
}

/** The first lines of a file, cut at a line break (never inside the last line shown). */
function head(file: Buffer): Buffer {
  let lines = 0;
  for (let i = 0; i < Math.min(file.length, 256 * 1024); i++) {
    if (file[i] === 0x0a && ++lines >= 64) return file.subarray(0, i + 1);
  }
  if (file.length <= 256 * 1024) return file;
  const cut = file.subarray(0, 256 * 1024).lastIndexOf(0x0a);
  return file.subarray(0, cut > 0 ? cut + 1 : 256 * 1024);
}

/** The header and the first rows; a file that is not CSV (or has no header) is a 400 naming why. */
export function previewCsv(file: Buffer): Preview {
  // The first rows only: never parse a whole 10 MB file to show five of its lines.
  let records: string[][];
  try {
    records = parse(head(file), { bom: true, skip_empty_lines: true, relax_column_count: true, to_line: PREVIEW_ROWS + 1 + 20 });
  } catch (err) {
    throw refusal({ code: "invalid_csv", status: 400, message: `The file is not a CSV file we can read: ${(err as Error).message}` });
  }
  const [header, ...rows] = records.filter((r) => r.some((c) => c.trim() !== ""));
  if (!header) throw refusal({ code: "invalid_csv", status: 400, message: "The file is empty: its first row should name the columns." });
  return { header: header.map((h) => h.trim()), rows: rows.slice(0, PREVIEW_ROWS) };
}

/** The byte where the header row ends (its line break), quotes respected. */
function headerEnd(file: Buffer): number {
  let quoted = false;
  for (let i = 0; i < file.length; i++) {
    const c = file[i];
    if (c === 0x22) quoted = !quoted;
    else if (!quoted && (c === 0x0a || c === 0x0d)) return i;
  }
  return file.length;
}

const csvCell = (s: string) => (/[",\r\n]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s);

/**
 * The file with its header row replaced by `header` (the mapped names; "" for a column left
 * out), the rows untouched: every row keeps its line number for the report.
 */
export function withHeader(file: Buffer, header: string[]): Buffer {
  const bom = file[0] === 0xef && file[1] === 0xbb && file[2] === 0xbf ? 3 : 0;
  const end = headerEnd(file.subarray(bom)) + bom;
  // A header with quoted line breaks spanned more lines: as many empty lines (which the import skips) keep the rows where they were.
  const extra = file.subarray(bom, end).toString("utf8").match(/\r\n|\n|\r/g)?.length ?? 0;
  return Buffer.concat([Buffer.from(header.map(csvCell).join(",") + "\n".repeat(extra)), file.subarray(end)]);
}

export interface MappingTarget {
  value: string;
  label: string;
}

/** The chosen target of each column from the posted form; a target chosen twice is a 400. */
export function chosenMapping(body: unknown, columns: number, allowed: Set<string>): string[] {
  const form = (body ?? {}) as Record<string, unknown>;
  const mapping = Array.from({ length: columns }, (_, i) => {
    const v = form[`col.${i}`];
    const value = typeof v === "string" ? v : "";
    if (value && !allowed.has(value)) throw refusal({ code: "invalid_request", status: 400, message: `Column ${i + 1}: "${value.slice(0, 60)}" is not a field to import into.` });
    return value;
  });
  const seen = new Set<string>();
  for (const m of mapping) {
    if (!m) continue;
    if (seen.has(m)) throw refusal({ code: "invalid_request", status: 400, message: `Two columns are mapped to ${m}; map each field once.` });
    seen.add(m);
  }
  return mapping;
}
