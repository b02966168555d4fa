import { baseName, cell, csvFile, csvHeader, hasColumns, isJsonFile, norm, readJson } from "./files.js";
import { contact, ImportFileError, looksLikeEmail, parseDate, parseFlag, propertySlug, type Importer, type ImportRecord } from "./records.js";

/**
 * Resend's exports: the contacts (Audience / Contacts → Export: `id, email, first_name,
 * last_name, unsubscribed, created_at` and a column per custom property; the API's
 * `GET /contacts` objects carry the same fields), and, since Resend has no suppression export,
 * its sent emails (`GET /emails` → `{ data: [{ to, last_event, created_at }] }`, or a CSV with
 * `to` and `last_event`): an email whose last event is `bounced` or `complained` suppresses
 * its recipients.
 */
export const resend: Importer = {
  name: "resend",
  async *read(files) {
    for (const file of files) yield* (isJsonFile(file) ? fromJson(file) : fromCsv(file));
  },
};

const CONTACT_META = new Set(["id", "object", "audienceid", "updatedat"]);

function contactOf(e: Record<string, unknown>, file: string, line: number): ImportRecord {
  const email = String(e.email ?? "").trim();
  if (!looksLikeEmail(email)) return { kind: "rejected", file, line, email, reason: "email is not an email address" };
  const c = contact({ file, line }, email);
  for (const [key, raw] of Object.entries(e)) {
    const k = norm(key);
    if (raw === null || raw === undefined || raw === "" || k === "email" || CONTACT_META.has(k)) continue;
    if (k === "firstname") c.firstName = String(raw).trim();
    else if (k === "lastname") c.lastName = String(raw).trim();
    else if (k === "unsubscribed") {
      const flag = parseFlag(raw);
      if (flag === undefined) return { kind: "rejected", file, line, email, reason: `unsubscribed must be true or false, not "${String(raw).slice(0, 40)}"` };
      c.status = flag ? "UNSUBSCRIBED" : "SUBSCRIBED";
    } else if (k === "createdat") c.createdAt = parseDate(raw);
    else if (k === "properties" && raw && typeof raw === "object") {
      for (const [slug, value] of Object.entries(raw as Record<string, unknown>)) if (value !== null && value !== "") c.properties[propertySlug(slug)] = String(value);
    } else if (typeof raw !== "object") c.properties[propertySlug(key)] = String(raw).trim();
  }
  return c;
}

/**
 * A contact unsubscribed in Resend (it left through a broadcast's unsubscribe link) is also
 * suppressed as `unsubscribed`, as Mailroom records an unsubscribe of its own.
 */
function* withUnsubscribe(record: ImportRecord): Generator<ImportRecord> {
  yield record;
  if (record.kind === "contact" && record.status === "UNSUBSCRIBED") {
    yield { kind: "suppression", file: record.file, line: record.line, email: record.email, reason: "unsubscribed", source: record.file };
  }
}

/** One sent email: its recipients are suppressed when it bounced or drew a complaint. */
function* emailOf(to: string[], lastEvent: string, created: unknown, file: string, line: number): Generator<ImportRecord> {
  const event = lastEvent.trim().toLowerCase();
  const reason = event === "bounced" ? "hard_bounce" : event === "complained" ? "complaint" : undefined;
  if (!reason) {
    yield { kind: "skipped", file, line, reason: `an email whose last event is ${event || "unknown"} suppresses nothing` };
    return;
  }
  for (const email of to) {
    if (!looksLikeEmail(email)) yield { kind: "rejected", file, line, email, reason: "to is not an email address" };
    else yield { kind: "suppression", file, line, email: email.trim(), reason, createdAt: parseDate(created), source: file };
  }
}

async function* fromJson(file: string): AsyncGenerator<ImportRecord> {
  const name = baseName(file);
  const data = await readJson(file);
  const list = Array.isArray(data) ? data : (data as { data?: unknown })?.data;
  if (!Array.isArray(list)) throw new ImportFileError(`${name} is not a Resend export: expected a list of contacts or emails ({"data": […]})`);
  for (const [i, e] of list.entries()) {
    const item = (e && typeof e === "object" ? e : {}) as Record<string, unknown>;
    if ("last_event" in item) yield* emailOf(Array.isArray(item.to) ? item.to.map(String) : [String(item.to ?? "")], String(item.last_event ?? ""), item.created_at, name, i + 1);
    else yield* withUnsubscribe(contactOf(item, name, i + 1));
  }
}

async function* fromCsv(file: string): AsyncGenerator<ImportRecord> {
  const name = baseName(file);
  const header = await csvHeader(file);
  const emails = hasColumns(header, "to", "last_event");
  if (!emails && !hasColumns(header, "email")) {
    throw new ImportFileError(`${name} is not a Resend export: expected the contacts (email, first_name, last_name, unsubscribed, …) or the emails (to, last_event, …); found ${header.join(", ")}`);
  }
  for await (const { line, row } of csvFile(file)) {
    if (emails) yield* emailOf(cell(row, "to").split(/[,;]/).map((s) => s.trim()).filter(Boolean), cell(row, "last_event"), cell(row, "created_at"), name, line);
    else yield* withUnsubscribe(contactOf(row, name, line));
  }
}
