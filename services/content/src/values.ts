/** How a contact property value reads in a message (the merge's and the Liquid engine's outputs alike). */
export function stringifyValue(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "";
  if (typeof value === "boolean" || typeof value === "bigint") return String(value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "" : value.toISOString();
  if (Array.isArray(value)) return value.map(stringifyValue).join(", ");
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}
