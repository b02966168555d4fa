import { baseName, cell, csvFile, csvHeader, hasColumns, isJsonFile, norm, readJson } from "./files.js";
import {
  contact, ImportFileError, looksLikeEmail, parseDate, propertySlug, type Importer, type ImportRecord, type SuppressionReasonName,
} from "./records.js";

/**
 * SendGrid's exports: the suppression lists (Suppressions → Bounces, Spam Reports, Global
 * Unsubscribes, Group Unsubscribes, Invalid Emails, Blocks: "Export CSV", or the v3 API's JSON
 * arrays of `{ created, email, reason?, status?, ip? }`) and the Marketing Campaigns contacts
 * export (CSV: EMAIL, FIRST_NAME, LAST_NAME, ADDRESS_LINE_1, …, CREATED_AT, UPDATED_AT,
 * CONTACT_ID and a column per custom field). Which list a file is comes from its name (as
 * SendGrid names the download, or as you name it) and its columns.
 */
export const sendgrid: Importer = {
  name: "sendgrid",
  async *read(files) {
    for (const file of files) yield* readFile(file);
  },
};

type ListKind = "bounces" | "spam_reports" | "unsubscribes" | "invalid_emails" | "blocks";
const REASON: Record<Exclude<ListKind, "blocks">, SuppressionReasonName> = {
  bounces: "hard_bounce", spam_reports: "complaint", unsubscribes: "unsubscribed", invalid_emails: "hard_bounce",
};

/** Which suppression list a file holds, from its name first, then its columns. */
function listKind(file: string, header: string[]): ListKind | undefined {
  const name = baseName(file).toLowerCase();
  if (/spam/.test(name)) return "spam_reports";
  if (/block/.test(name)) return "blocks";
  if (/invalid/.test(name)) return "invalid_emails";
  if (/bounce/.test(name)) return "bounces";
  if (/unsub/.test(name)) return "unsubscribes";
  const cols = new Set(header.map(norm));
  if (!cols.has("email")) return undefined;
  if (cols.has("ip")) return "spam_reports";
  if (cols.has("reason") && cols.has("status")) return "bounces";
  if (cols.has("reason")) return "invalid_emails";
  if (cols.has("created") && cols.size <= 3) return "unsubscribes";
  return undefined;
}

function suppression(kind: ListKind, e: { email: string; created?: unknown; status?: string }, file: string, line: number): ImportRecord {
  const origin = { file, line };
  if (!looksLikeEmail(e.email)) return { kind: "rejected", ...origin, email: e.email, reason: "email is not an email address" };
  // Blocks are the receiving server refusing for now (a blocklisted IP, content): SendGrid retries them, so they suppress nothing.
  if (kind === "blocks") return { kind: "skipped", ...origin, reason: "a block (a temporary refusal) is not a suppression" };
  if (kind === "bounces" && e.status && /^4/.test(e.status.trim())) return { kind: "skipped", ...origin, reason: `soft bounce (${e.status.trim()})` };
  return { kind: "suppression", ...origin, email: e.email, reason: REASON[kind], createdAt: parseDate(e.created), source: file };
}

/** Columns of the contacts export that are neither a contact field nor worth a property. */
const DROPPED = new Set(["contactid", "updatedat", "alternateemails", "whatsapp", "line", "facebook", "uniquename", "phonenumberid", "externalid", "anonymousid", "listids", "segmentids"]);

function contactRow(row: Record<string, string>, file: string, line: number): ImportRecord {
  const email = cell(row, "EMAIL");
  if (!looksLikeEmail(email)) return { kind: "rejected", file, line, email, reason: "EMAIL is not an email address" };
  const c = contact({ file, line }, email);
  for (const [header, raw] of Object.entries(row)) {
    const value = raw.trim();
    const key = norm(header);
    if (!value || key === "email" || DROPPED.has(key)) continue;
    if (key === "firstname") c.firstName = value;
    else if (key === "lastname") c.lastName = value;
    else if (key === "phonenumber") c.fields.phone = value;
    else if (key === "city") c.fields.city = value;
    else if (key === "country" && /^[A-Za-z]{2}$/.test(value)) c.fields.countryCode = value.toUpperCase();
    else if (key === "createdat") c.createdAt = parseDate(value);
    else c.properties[propertySlug(header)] = value;
  }
  return c;
}

async function* readFile(file: string): AsyncGenerator<ImportRecord> {
  const name = baseName(file);
  if (isJsonFile(file)) {
    const data = await readJson(file);
    if (!Array.isArray(data)) throw new ImportFileError(`${name} is not a SendGrid suppression list: expected a JSON array of { email, created }`);
    const header = Object.keys((data[0] ?? {}) as object);
    const kind = listKind(file, header.length ? header : ["email", "created"]);
    if (!kind) throw new ImportFileError(`${name}: cannot tell which SendGrid suppression list this is; name the file bounces, spam_reports, unsubscribes, invalid_emails or blocks`);
    for (const [i, e] of data.entries()) {
      const item = (e && typeof e === "object" ? e : {}) as Record<string, unknown>;
      yield suppression(kind, { email: String(item.email ?? "").trim(), created: item.created, status: item.status === undefined ? undefined : String(item.status) }, name, i + 1);
    }
    return;
  }
  const header = await csvHeader(file);
  const isContacts = hasColumns(header, "EMAIL") && header.some((h) => ["firstname", "lastname", "contactid", "createdat"].includes(norm(h))) && !hasColumns(header, "created");
  const kind = isContacts ? undefined : listKind(file, header);
  if (!isContacts && !kind) {
    throw new ImportFileError(`${name} is not a SendGrid export: expected the contacts export (EMAIL, FIRST_NAME, LAST_NAME, …) or a suppression list (email, created, …); found ${header.join(", ")}`);
  }
  for await (const { line, row } of csvFile(file)) {
    if (isContacts) yield contactRow(row, name, line);
    else yield suppression(kind!, { email: cell(row, "email"), created: cell(row, "created"), status: cell(row, "status") }, name, line);
  }
}
