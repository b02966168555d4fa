import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

/** Where the CLI writes: stdout for results, stderr for progress and notes (tests capture both). */
export interface Output {
  out(line: string): void;
  err(line: string): void;
  json: boolean;
}

export const consoleOutput = (json: boolean): Output => ({
  out: (line) => process.stdout.write(line + "\n"),
  err: (line) => process.stderr.write(line + "\n"),
  json,
});

export const when = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");

/** Plain aligned columns, header first. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return "";
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : (cell ?? "").padEnd(widths[i]))).join("  ").trimEnd()).join("\n");
}

/** JSON that survives bigint fields (int64, timestamps). */
export const toJson = (value: unknown) =>
  JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? Number(v) : v), 2);
